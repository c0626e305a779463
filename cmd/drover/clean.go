package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
)

func init() {
	commands["clean"] = commandInfo{
		summary: "remove old jobs of one state (completed by default, keeping the last hour)",
		make: func(m *Main) command {
			return &cleanCmd{out: m.Stdout, errOut: m.Stderr, in: m.Stdin, interactive: m.interactive()}
		},
	}
}

// cleanCmd is `drover clean`, audited as clean (dry runs and refusals
// change nothing and are not).
type cleanCmd struct {
	out, errOut io.Writer
	// in answers the confirmation prompt when interactive.
	in          io.Reader
	interactive bool
}

func (c *cleanCmd) Run(ctx context.Context, args []string) error {
	fs := newQueueFlags("clean", c.out, fmt.Sprintf("Usage: drover clean <queue> [--state completed] [--grace %s] [--limit N] [--dry-run] [--yes] [--json]\n\n"+
		"Removes jobs of one state older than the grace period (by default completed jobs finished more\n"+
		"than an hour ago, as the dashboard's clean action); jobs a worker holds are skipped. It says how\n"+
		"many jobs it will remove and asks first, then removes at most that many (jobs that age past the\n"+
		"grace or arrive while it asks stay); --yes skips the question.", inspect.CleanGraceDefault))
	state := fs.String("state", "completed", "state to clean: completed, failed, delayed, waiting, prioritized, paused, waiting-children, or active (jobs a worker holds are skipped)")
	grace := fs.duration("grace", inspect.CleanGraceDefault, "keep jobs younger than this (finished for completed and failed); 0 = remove them all")
	limit := fs.Int("limit", 0, "remove at most this many (0 = no limit)")
	dryRun := fs.Bool("dry-run", false, "only count and list the jobs that would be removed")
	yes := fs.Bool("yes", false, "remove without asking (for scripts; without it, clean asks on a terminal and refuses elsewhere)")
	asJSON := fs.jsonFlag()
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("clean needs one <queue>, got %q", pos)
	}
	if *grace < 0 {
		return usagef("--grace must not be negative, got %s", *grace)
	}
	if *limit < 0 {
		return usagef("--limit must not be negative, got %d", *limit)
	}
	switch drover.JobState(*state) {
	case drover.StateCompleted, drover.StateFailed, drover.StateDelayed, drover.StateWaiting,
		drover.StatePrioritized, drover.StatePaused, drover.StateWaitingChildren, drover.StateActive:
	default:
		return usagef("--state %q: want completed, failed, delayed, waiting, prioritized, paused, waiting-children or active", *state)
	}
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	queue, st := pos[0], drover.JobState(*state)
	what := fmt.Sprintf("%s jobs older than %s from %s", st, *grace, queue)
	removeUpTo := *limit
	if *dryRun || !*yes {
		ids, err := ins.CleanCandidates(ctx, queue, st, *grace, *limit)
		if err != nil {
			return err
		}
		count := fmt.Sprint(len(ids))
		capped := *limit == 0 && len(ids) >= inspect.CleanPreviewCap
		if capped {
			count = fmt.Sprintf("%d or more", inspect.CleanPreviewCap) // the preview stops there, clean does not
		}
		switch {
		case *dryRun && *asJSON:
			// capped: wouldRemove is where the preview stopped, not all
			// the clean would remove (the text says "or more").
			return writeJSON(c.out, map[string]any{"queue": queue, "state": st, "dryRun": true, "wouldRemove": len(ids), "capped": capped, "ids": ids})
		case *dryRun:
			fmt.Fprintf(c.out, "dry run: would remove %s %s\n", count, what)
			listIDs(c.out, ids)
			return nil
		case len(ids) == 0:
			if *asJSON {
				return writeJSON(c.out, map[string]any{"queue": queue, "state": st, "removed": 0, "ids": []string{}})
			}
			fmt.Fprintf(c.out, "nothing to remove: no %s\n", what)
			return nil
		case !c.interactive:
			return usagef("clean would remove %s %s: pass --yes to confirm (no terminal to ask on), or --dry-run to list them", count, what)
		}
		fmt.Fprintf(c.out, "remove %s %s? This cannot be undone. [y/N] ", count, what)
		if !confirmed(c.in) {
			fmt.Fprintln(c.out, "not removed")
			return nil
		}
		// The count asked about, not more: jobs that aged past the grace or
		// arrived while the question was open stay (the clean takes the
		// oldest, the ones counted). A count that hit the preview's cap
		// said "or more", and removes them all.
		if *limit != 0 || len(ids) < inspect.CleanPreviewCap {
			removeUpTo = len(ids)
		}
	}
	ids, err := ins.Clean(ctx, queue, st, *grace, removeUpTo)
	fs.redis.record(ctx, c.errOut, dashboard.AuditEntry{Action: "clean", Queue: queue,
		Detail: fmt.Sprintf("state=%s grace=%s limit=%d", st, *grace, removeUpTo), Jobs: len(ids),
		JobIDs: ids[:min(len(ids), dashboard.AuditJobIDsMax)]}, err)
	if err != nil {
		return err
	}
	if *asJSON {
		if ids == nil {
			ids = []string{}
		}
		return writeJSON(c.out, map[string]any{"queue": queue, "state": st, "removed": len(ids), "ids": ids})
	}
	fmt.Fprintf(c.out, "removed %d %s\n", len(ids), what)
	return nil
}

// confirmed reads one line from in and reports whether it says yes.
func confirmed(in io.Reader) bool {
	if in == nil {
		return false
	}
	line, _ := bufio.NewReader(in).ReadString('\n')
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// listIDs prints up to 20 ids, one a line.
func listIDs(w io.Writer, ids []string) {
	for i, id := range ids {
		if i == 20 {
			fmt.Fprintf(w, "  ... and %d more\n", len(ids)-20)
			break
		}
		fmt.Fprintf(w, "  %s\n", id)
	}
}
