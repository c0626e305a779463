package main

import (
	"context"
	"fmt"
	"io"

	"github.com/seed40057009/drover/dashboard"
)

func init() {
	commands["drain"] = commandInfo{
		summary: "delete the jobs waiting to run (and delayed ones with --delayed); running and finished jobs stay",
		make: func(m *Main) command {
			return &drainCmd{out: m.Stdout, errOut: m.Stderr, in: m.Stdin, interactive: m.interactive()}
		},
	}
}

// drainCmd is `drover drain`, audited as drain (dry runs and refusals
// change nothing and are not).
type drainCmd struct {
	out, errOut io.Writer
	// in answers the confirmation prompt when interactive.
	in          io.Reader
	interactive bool
}

func (c *drainCmd) Run(ctx context.Context, args []string) error {
	fs := newQueueFlags("drain", c.out, "Usage: drover drain <queue> [--delayed] [--dry-run] [--yes] [--json]\n\n"+
		"Deletes every job that waits to run: waiting, paused and prioritized, and delayed ones\n"+
		"(scheduled or backing off before a retry) with --delayed; as BullMQ's queue.drain(), no\n"+
		"events are written. Active and finished jobs, parents waiting for their children and a job\n"+
		"scheduler's next run stay; a drained flow child is detached from its parent. It says how\n"+
		"many jobs wait and asks first; --yes skips the question.")
	delayed := fs.Bool("delayed", false, "delete delayed jobs too")
	dryRun := fs.Bool("dry-run", false, "only count the jobs that would be deleted")
	yes := fs.Bool("yes", false, "drain without asking (for scripts; without it, drain asks on a terminal and refuses elsewhere)")
	asJSON := fs.jsonFlag()
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("drain needs one <queue>")
	}
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	queue := pos[0]
	if *dryRun || !*yes {
		// The queue's counts (one call however many jobs wait): what the
		// drain deletes at most, a scheduler's next run being kept.
		info, err := ins.QueueInfo(ctx, queue)
		if err != nil {
			return err
		}
		n := info.Counts.Waiting + info.Counts.Paused + info.Counts.Prioritized
		what := "waiting, paused and prioritized"
		if *delayed {
			n += info.Counts.Delayed
			what = "waiting, paused, prioritized and delayed"
		}
		switch {
		case *dryRun && *asJSON:
			return writeJSON(c.out, map[string]any{"queue": queue, "delayed": *delayed, "dryRun": true, "wouldRemove": n})
		case *dryRun:
			fmt.Fprintf(c.out, "dry run: would delete up to %d %s jobs from %s\n", n, what, queue)
			return nil
		case n == 0:
			if *asJSON {
				return writeJSON(c.out, map[string]any{"queue": queue, "delayed": *delayed, "removed": 0})
			}
			fmt.Fprintf(c.out, "nothing to drain: no %s jobs in %s\n", what, queue)
			return nil
		case !c.interactive:
			return usagef("drain would delete up to %d %s jobs from %s: pass --yes to confirm (no terminal to ask on), or --dry-run to count them", n, what, queue)
		}
		fmt.Fprintf(c.out, "delete up to %d %s jobs from %s? This cannot be undone. [y/N] ", n, what, queue)
		if !confirmed(c.in) {
			fmt.Fprintln(c.out, "not drained")
			return nil
		}
	}
	n, drained, err := ins.DrainNamed(ctx, queue, *delayed, dashboard.AuditJobIDsMax)
	fs.redis.record(ctx, c.errOut, dashboard.AuditEntry{Action: "drain", Queue: queue,
		Detail: fmt.Sprintf("delayed=%t", *delayed), Jobs: n, JobIDs: drained}, err)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c.out, map[string]any{"queue": queue, "delayed": *delayed, "removed": n})
	}
	fmt.Fprintf(c.out, "drained %s: deleted %d jobs\n", queue, n)
	return nil
}
