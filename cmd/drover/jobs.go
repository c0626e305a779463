package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/keytype"
)

func init() {
	commands["jobs"] = commandInfo{
		summary: "list jobs of a state, filtered by name, failed reason or attempts left",
		make:    func(m *Main) command { return &jobsCmd{out: m.Stdout} },
	}
}

type jobsCmd struct {
	out io.Writer
}

func (c *jobsCmd) Run(ctx context.Context, args []string) error {
	fs := newQueueFlags("jobs", c.out, "Usage: drover jobs [<queue>...] [--state failed] [--filter EXPR] [--limit N] [--after CURSOR] [--json]\n\nLists jobs of one state, of the named queues or of every queue under the prefix.\nA page that has more ends with the --after cursor of the next one: it continues after\nthe page's last job wherever jobs entered or left the state in between.")
	state := fs.String("state", "failed", "state to list: waiting, prioritized, active, delayed, completed, failed, paused, waiting-children")
	filterExpr := fs.String("filter", "", `filter: name=NAME reason=TEXT error=GROUP left<=N finished>=TIME (e.g. "reason=timeout left<=1")`)
	limit := fs.Int("limit", 50, "jobs per queue")
	offset := fs.Int("offset", 0, "start at this position in the state's list")
	after := fs.String("after", "", "continue after this cursor (printed at the end of a page; one queue only)")
	asc := fs.Bool("asc", false, "oldest first (delayed: soonest due; prioritized: next to run)")
	asJSON := fs.jsonFlag()
	queues, err := fs.parse(args)
	if err != nil {
		return err
	}
	filter, err := inspect.ParseFilter(*filterExpr)
	if err != nil {
		return usagef("--filter: %v", err)
	}
	if *limit < 1 || *offset < 0 {
		return usagef("--limit must be at least 1 and --offset not negative")
	}
	var cursor inspect.Cursor
	if *after != "" {
		if cursor, err = inspect.ParseCursor(*after); err != nil {
			return usagef("--after: %v", err)
		}
		if *offset != 0 {
			return usagef("--after and --offset both say where to start; give one")
		}
		if len(queues) != 1 {
			return usagef("--after continues one queue's page: name that queue")
		}
	}
	switch drover.JobState(*state) {
	case drover.StateWaiting, drover.StatePrioritized, drover.StateActive, drover.StateDelayed,
		drover.StateCompleted, drover.StateFailed, drover.StatePaused, drover.StateWaitingChildren:
	default:
		return usagef("--state %q: want waiting, prioritized, active, delayed, completed, failed, paused or waiting-children", *state)
	}
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	if len(queues) == 0 {
		if queues, err = ins.Queues(ctx); err != nil {
			return err
		}
		if len(queues) == 0 && !*asJSON {
			// A bare header read as "no such jobs anywhere" when the
			// prefix (or Redis) held no queue at all, a wrong --prefix as
			// often as not; drover queues says it this way.
			_, err := fmt.Fprintf(c.out, "no queues under prefix %q\n", ins.Prefix())
			return err
		}
	}
	pages := make([]*inspect.JobPage, 0, len(queues))
	matched := make([]int, 0, len(queues))
	// A queue whose keys another program overwrote is named at the end,
	// after the others' jobs (as drover queues does); it hid them all.
	var unreadable []string
	for _, q := range queues {
		n := 0
		var err error
		if !filter.IsZero() {
			n, err = ins.CountMatching(ctx, q, drover.JobState(*state), filter)
		}
		var p *inspect.JobPage
		if err == nil {
			p, err = ins.Jobs(ctx, q, &inspect.ListOptions{
				State: drover.JobState(*state), Filter: filter, Limit: *limit, Offset: *offset, Asc: *asc, After: cursor,
			})
		}
		if _, wrongType := errors.AsType[*keytype.Error](err); wrongType {
			unreadable = append(unreadable, err.Error())
			continue
		}
		if err != nil {
			return err
		}
		matched = append(matched, n)
		pages = append(pages, p)
	}
	var unreadableErr error
	if len(unreadable) > 0 {
		unreadableErr = fmt.Errorf("%d of %d queues could not be read: %s", len(unreadable), len(queues), strings.Join(unreadable, "; "))
	}
	if *asJSON {
		if err := writeJSON(c.out, pages); err != nil {
			return err
		}
		return unreadableErr
	}
	t := newTable(c.out, "QUEUE", "ID", "NAME", "RETRY STATE", "ATTEMPTS", "STALLS", "WHEN", "FAILED REASON")
	shown := 0
	for _, p := range pages {
		for _, j := range p.Jobs {
			w := when(j.FinishedOn)
			if !j.NextRun.IsZero() {
				w = "next " + when(j.NextRun) + " (" + until(j.NextRun) + ")"
			} else if j.FinishedOn.IsZero() {
				w = when(j.Timestamp)
			}
			t.row(p.Queue, j.ID, clip(j.Name, 30), retryLabel(j), fmt.Sprintf("%d/%d", j.Budget.Made, j.Budget.Allowed),
				j.StalledCount, w, clip(j.FailedReason, 60))
			shown++
		}
	}
	if err := t.flush(); err != nil {
		return err
	}
	for k, p := range pages {
		more, next := "", ""
		if p.More {
			more = "; more"
			next = fmt.Sprintf("%s: next page: drover jobs %s --state %s%s --after %s\n", p.Queue, shellWord(p.Queue), p.State,
				pageFlags(fs.FlagSet), shellWord(string(p.NextCursor)))
		}
		if m := p.Moved; m != nil {
			more += fmt.Sprintf("; the list moved since the last page (job %s was at %d, now %d", m.ID, m.From, m.To)
			if m.Gone {
				more += ", it left the state"
			}
			if m.Approximate {
				more += ", and so did the jobs next to it: jobs may be skipped or shown twice"
			}
			more += ")"
		}
		if p.Truncated {
			more += fmt.Sprintf("; stopped after scanning %d jobs", p.Scanned)
		}
		match := ""
		if !filter.IsZero() {
			match = fmt.Sprintf(", %d match %s", matched[k], filter.String())
		}
		fmt.Fprintf(c.out, "%s: %d %s jobs%s, %d shown%s\n%s", p.Queue, p.Total, p.State, match, len(p.Jobs), more, next)
		for _, u := range p.Unreadable {
			fmt.Fprintf(c.out, "%s: cannot read job %s (another tool wrote it, or it is damaged): %s\n", p.Queue, u.ID, u.Error)
		}
	}
	return unreadableErr
}

// pageFlags are the flags of this listing that the next page's command
// must repeat, as " --name value" words: the ones that choose and order the
// jobs (--filter, --asc), --limit, and where the queue is (--prefix, and
// --redis unless its URL holds a password, which is not printed). The
// command said only --state and --after: pasted, it listed another
// filter's jobs, or the other order from the cursor on ("the list moved"),
// or looked for the queue under the default prefix.
func pageFlags(fs *flag.FlagSet) string {
	var b strings.Builder
	fs.Visit(func(f *flag.Flag) {
		switch f.Name {
		case "redis":
			if u, err := url.Parse(f.Value.String()); err == nil && u.User != nil {
				if _, hasPassword := u.User.Password(); hasPassword {
					return
				}
			}
			if strings.Contains(f.Value.String(), "password=") {
				return
			}
		case "filter", "limit", "prefix":
		case "asc":
			if f.Value.String() == "true" {
				b.WriteString(" --asc")
			}
			return
		default:
			return
		}
		fmt.Fprintf(&b, " --%s %s", f.Name, shellWord(f.Value.String()))
	})
	return b.String()
}

// shellWord quotes s for a POSIX shell when it holds anything but letters,
// digits and -_.:/+@, so a printed command can be pasted as it is.
func shellWord(s string) string {
	safe := s != ""
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_.:/+@", r)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
