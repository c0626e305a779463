package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strings"
)

// Main is the drover command: it dispatches to one subcommand per file.
type Main struct {
	Stdout io.Writer
	Stderr io.Writer
	// Stdin answers confirmation prompts; they are asked only when Stdin
	// and Stdout are terminals, or when Interactive is set.
	Stdin       io.Reader
	Interactive bool
}

// interactive reports whether destructive commands may ask before acting.
func (m *Main) interactive() bool {
	return m.Interactive || (isTerminal(m.Stdout) && isTerminalReader(m.Stdin))
}

// command is one subcommand.
type command interface {
	Run(ctx context.Context, args []string) error
}

type commandInfo struct {
	summary string
	make    func(m *Main) command
}

// commands is filled by each subcommand's file.
var commands = map[string]commandInfo{}

// usageError is a mistake in the command line (exit code 2); err, when
// set, is the sentinel it matches with errors.Is.
type usageError struct {
	msg string
	err error
}

func (e *usageError) Error() string { return e.msg }

func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return &usageError{msg: fmt.Sprintf(format, args...)} }

// uniqueArgs drops the repeats of the arguments, first ones kept in order:
// a job id named twice is acted on once. The second try of a promote or
// retry found the job already moved and failed the command.
func uniqueArgs(args []string) []string {
	seen := make(map[string]bool, len(args))
	out := make([]string, 0, len(args))
	for _, a := range args {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	return out
}

// checkJobIDs refuses an empty or all-blank job id before anything
// connects: no job has one (BullMQ's ids are never empty), and "job not
// found" (and an audit entry for it) would hide the typo, an unset shell
// variable as often as not.
func checkJobIDs(ids []string) error {
	for _, id := range ids {
		if strings.TrimSpace(id) == "" {
			return usagef("job id %q is empty: pass the id of a job (an unset shell variable?)", id)
		}
	}
	return nil
}

// Run runs the subcommand named by args[0].
func (m *Main) Run(ctx context.Context, args []string) error {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "version") {
		fmt.Fprintln(m.Stdout, "drover", version())
		return nil
	}
	if len(args) > 1 && args[0] == "help" {
		// `drover help <command>` is `drover <command> -h`; extra words
		// or an unknown command are a usage error, as for any command.
		if len(args) > 2 {
			return usagef("help takes one <command>, got %q", args[1:])
		}
		if _, ok := commands[args[1]]; !ok {
			m.usageTo(m.Stderr)
			return usagef("unknown command %q", args[1])
		}
		return m.Run(ctx, []string{args[1], "-h"})
	}
	if len(args) == 0 {
		// No command is a usage error (exit 2), as for the go command:
		// the list goes to stderr, so a script's output stays empty.
		m.usageTo(m.Stderr)
		return usagef("no command given")
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		m.usage()
		return nil
	}
	info, ok := commands[args[0]]
	if !ok {
		m.usageTo(m.Stderr)
		return usagef("unknown command %q", args[0])
	}
	// Every byte a command prints passes escapeControls: queue and job
	// names, reasons, traces and logs come from whoever writes to Redis.
	safe := Main{Stdout: newEscapingWriter(m.Stdout), Stderr: newEscapingWriter(m.Stderr), Stdin: m.Stdin, Interactive: m.Interactive}
	err := info.make(&safe).Run(ctx, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return nil // the command printed its usage for -h
	}
	if err != nil {
		if msg := tidyMessage(err.Error()); msg != err.Error() {
			err = &tidiedError{msg: msg, err: err}
		}
	}
	return err
}

// tidyMessage drops the "drover: " that the library's sentinel errors and
// script refusals begin with where it follows another message's ": ":
// main prints every error after "drover: " already, and a line such as
// `drover: cancel job "7" in queue "q": drover: cancel request not
// delivered` read as two messages.
func tidyMessage(msg string) string { return strings.ReplaceAll(msg, ": drover: ", ": ") }

// tidiedError is an error printed with tidyMessage's text; errors.Is and
// errors.As see the error it was made from.
type tidiedError struct {
	msg string
	err error
}

func (e *tidiedError) Error() string { return e.msg }

func (e *tidiedError) Unwrap() error { return e.err }

func (m *Main) usage() { m.usageTo(m.Stdout) }

func (m *Main) usageTo(w io.Writer) {
	fmt.Fprintln(w, "drover: BullMQ-compatible job queue for Go: demo, lab, dashboard and queue admin.")
	fmt.Fprintln(w, "\nUsage: drover <command> [flags]\n\nCommands:")
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, commands[n].summary)
	}
	fmt.Fprintln(w, "\nRun `drover <command> -h` for a command's flags.")
	fmt.Fprint(w, exitStatusHelp)
}

// exitStatusHelp ends `drover help`: what the exit codes mean (main sets
// them; TestExitStatusAsDocumented holds the commands to it).
const exitStatusHelp = `
Exit status:
  0  done; also a question answered no (nothing changed), and demo, dashboard
     and watch stopped with Ctrl-C
  1  the command failed: Redis unreachable or refusing, a queue or job not
     found, a change refused; with several ids, any of them not done
  2  a usage error: unknown command or flag, a bad value, a missing
     argument, a destructive command without --yes and no terminal to ask on
130 stopped by Ctrl-C before it finished (143: by SIGTERM), or a second
    Ctrl-C while stopping
Errors go to stderr, one line each, starting "drover: ".
`

// version is the module version drover was built from (go install
// .../cmd/drover@v1.2.3), or "(devel)" plus the commit for a build from a
// checkout.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev != "" {
		v += fmt.Sprintf(" (commit %.12s%s)", rev, modified)
	}
	return v + ", " + bi.GoVersion
}
