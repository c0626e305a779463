package main

import (
	"context"
	"fmt"
	"io"

	"github.com/seed40057009/drover/dashboard"
)

func init() {
	commands["orphans"] = commandInfo{
		summary: "count job hashes no state holds, or remove them (--remove)",
		make:    func(m *Main) command { return &orphansCmd{out: m.Stdout, errOut: m.Stderr} },
	}
}

// orphansCmd is `drover orphans`: a count, or with --remove an action
// audited as remove-orphans.
type orphansCmd struct {
	out, errOut io.Writer
}

func (c *orphansCmd) Run(ctx context.Context, args []string) (err error) {
	fs := newQueueFlags("orphans", c.out, "Usage: drover orphans <queue> [--remove] [--limit N] [--scan-count N] [--json]\n\n"+
		"Counts the job hashes (with their logs, lock and flow keys) that no state of the queue holds:\n"+
		"no wait, active, delayed, prioritized, waiting-children, completed or failed list has their id.\n"+
		"A healthy queue has none; BullMQ 5.66.6's age-based retention left some behind (BullMQ's\n"+
		"removeOrphanedJobs). --remove deletes them. Both walk the queue's keys with SCAN; each batch of\n"+
		"ids is checked in one script, so a job added or moved meanwhile is never taken for an orphan.")
	remove := fs.Bool("remove", false, "delete the orphaned jobs")
	limit := fs.Int("limit", 0, "stop after this many orphans (0 = no limit)")
	scanCount := fs.Int("scan-count", 1000, "keys each SCAN step reads (a hint to Redis)")
	asJSON := fs.jsonFlag()
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("orphans needs one <queue>, got %q", pos)
	}
	if *limit < 0 || *scanCount < 1 {
		return usagef("--limit must not be negative and --scan-count must be at least 1, got %d and %d", *limit, *scanCount)
	}
	queue := pos[0]
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	if !*remove {
		n, err := ins.CountOrphanedJobs(ctx, queue, *scanCount, *limit)
		if err != nil {
			return err
		}
		if *asJSON {
			return writeJSON(c.out, map[string]any{"queue": queue, "orphans": n})
		}
		fmt.Fprintf(c.out, "%d orphaned jobs in %s\n", n, queue)
		return nil
	}
	n := 0
	defer func() {
		fs.redis.record(ctx, c.errOut, dashboard.AuditEntry{Action: "remove-orphans", Queue: queue,
			Detail: fmt.Sprintf("limit=%d", *limit), Jobs: n}, err)
	}()
	n, err = ins.RemoveOrphanedJobs(ctx, queue, *scanCount, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c.out, map[string]any{"queue": queue, "removed": n})
	}
	fmt.Fprintf(c.out, "removed %d orphaned jobs from %s\n", n, queue)
	return nil
}
