package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

func init() {
	commands["obliterate"] = commandInfo{
		summary: "delete a queue: every job and key (refused while jobs run, unless --force)",
		make: func(m *Main) command {
			return &obliterateCmd{out: m.Stdout, errOut: m.Stderr, in: m.Stdin, interactive: m.interactive()}
		},
	}
}

// obliterateCmd is `drover obliterate`, audited as obliterate (the
// dashboard's action; dry runs and refusals before asking are not).
type obliterateCmd struct {
	out, errOut io.Writer
	// in answers the confirmation prompt when interactive.
	in          io.Reader
	interactive bool
}

func (c *obliterateCmd) Run(ctx context.Context, args []string) error {
	fs := newQueueFlags("obliterate", c.out, "Usage: drover obliterate <queue> [--force] [--dry-run] [--yes] [--json]\n\n"+
		"Deletes the queue: every job in every state, its events, metrics, job schedulers and\n"+
		"deduplication ids (BullMQ's queue.obliterate()). While jobs are active it is refused and\n"+
		"nothing changes, unless --force, which deletes them under their workers. It says how many\n"+
		"jobs the queue holds and asks first; --yes skips the question.")
	force := fs.Bool("force", false, "delete active jobs too")
	dryRun := fs.Bool("dry-run", false, "only count the jobs that would be deleted")
	yes := fs.Bool("yes", false, "obliterate without asking (for scripts; without it, obliterate asks on a terminal and refuses elsewhere)")
	asJSON := fs.jsonFlag()
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("obliterate needs one <queue>")
	}
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	queue := pos[0]
	info, err := ins.QueueInfo(ctx, queue)
	if err != nil {
		return err
	}
	n := info.Counts.Total()
	if info.Counts.Active > 0 && !*force {
		return fmt.Errorf("%w: queue %q has %d active jobs: obliterate refused, nothing changed (--force deletes them under their workers)", drover.ErrActiveJobs, queue, info.Counts.Active)
	}
	// The job schedulers go too (BullMQ's obliterate deletes every key):
	// the count and the question said only "its N jobs", so a queue's cron
	// schedules vanished unannounced.
	sp, err := ins.SchedulersPage(ctx, queue, 0, 1)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("its %d jobs", n)
	if sp.Total > 0 {
		what += fmt.Sprintf(" and its %d job schedulers", sp.Total)
	}
	switch {
	case *dryRun && *asJSON:
		return writeJSON(c.out, map[string]any{"queue": queue, "dryRun": true, "wouldRemove": n, "wouldRemoveSchedulers": sp.Total})
	case *dryRun:
		fmt.Fprintf(c.out, "dry run: would delete queue %s and %s\n", queue, what)
		return nil
	case !*yes && !c.interactive:
		return usagef("obliterate would delete queue %s and %s: pass --yes to confirm (no terminal to ask on), or --dry-run to count them", queue, what)
	case !*yes:
		fmt.Fprintf(c.out, "delete queue %s and %s? This cannot be undone. [y/N] ", queue, what)
		if !confirmed(c.in) {
			fmt.Fprintln(c.out, "not obliterated")
			return nil
		}
	}
	err = ins.Obliterate(ctx, queue, *force)
	fs.redis.record(ctx, c.errOut, dashboard.AuditEntry{Action: "obliterate", Queue: queue,
		Detail: fmt.Sprintf("force=%t", *force), Jobs: int(n)}, err)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c.out, map[string]any{"queue": queue, "removed": n, "removedSchedulers": sp.Total})
	}
	fmt.Fprintf(c.out, "obliterated %s: deleted %s\n", queue, strings.TrimPrefix(what, "its "))
	return nil
}
