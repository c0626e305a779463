package main

import (
	"context"
	"fmt"
	"io"

	"github.com/seed40057009/drover/dashboard"
)

func init() {
	commands["promote"] = commandInfo{
		summary: "run delayed jobs now (all of a queue, or the given ids)",
		make:    func(m *Main) command { return &promoteCmd{out: m.Stdout, errOut: m.Stderr} },
	}
}

// promoteCmd is `drover promote`, audited as promote-all, or promote-job
// per id.
type promoteCmd struct {
	out, errOut io.Writer
}

func (c *promoteCmd) Run(ctx context.Context, args []string) error {
	fs := newQueueFlags("promote", c.out, "Usage: drover promote <queue> [--limit N] [--dry-run] [--json]\n"+
		"       drover promote <queue> <id>... [--json]\n\n"+
		"Moves delayed jobs (scheduled, or waiting for backoff) to wait now; they keep their attempts.\n"+
		"Without ids: every delayed job, or the --limit due first; --dry-run only counts them.")
	dryRun := fs.Bool("dry-run", false, "only count the delayed jobs that would be promoted")
	limit := fs.Int("limit", 0, "promote at most this many, those due first (0 = all)")
	asJSON := fs.jsonFlag()
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("promote needs a <queue>")
	}
	if err := checkJobIDs(pos[1:]); err != nil {
		return err
	}
	if *limit < 0 {
		return usagef("--limit must not be negative (0 = all), got %d", *limit)
	}
	if len(pos) > 1 && (*dryRun || *limit > 0) {
		return usagef("promote with job ids takes neither --dry-run nor --limit")
	}
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	queue, ids := pos[0], uniqueArgs(pos[1:])
	n := 0
	if len(ids) == 0 && *dryRun {
		// A count, as the operator would see it before confirming (the
		// queue's counts, one call however many are delayed): the jobs
		// delayed later are not in it, and --limit caps the action.
		info, err := ins.QueueInfo(ctx, queue)
		if err != nil {
			return err
		}
		n = int(info.Counts.Delayed)
		if *limit > 0 {
			n = min(n, *limit)
		}
		if *asJSON {
			return writeJSON(c.out, map[string]any{"queue": queue, "dryRun": true, "wouldPromote": n})
		}
		fmt.Fprintf(c.out, "would promote %d delayed jobs in %s (dry run: nothing moved)\n", n, queue)
		return nil
	}
	if len(ids) == 0 {
		detail := ""
		if *limit > 0 {
			detail = fmt.Sprintf("limit=%d", *limit)
		}
		// The entry names the first jobs promoted, due first, as the
		// dashboard's promote-all does.
		var promoted []string
		n, promoted, _, err = ins.PromoteNamed(ctx, queue, *limit, dashboard.AuditJobIDsMax)
		fs.redis.record(ctx, c.errOut, dashboard.AuditEntry{Action: "promote-all", Queue: queue, Detail: detail, Jobs: n, JobIDs: promoted}, err)
		if err != nil {
			return err
		}
	}
	results, promoted, err := eachID(ctx, &fs.redis, c.errOut, "promote-job", queue, ids, func(id string) error {
		return ins.PromoteJob(ctx, queue, id)
	})
	if err != nil {
		return err
	}
	n += promoted
	failed := len(ids) - promoted
	var notPromoted error
	if failed > 0 {
		notPromoted = fmt.Errorf("%d of %d jobs not promoted", failed, len(ids))
	}
	if *asJSON {
		out := map[string]any{"queue": queue, "promoted": n}
		if len(ids) > 0 {
			out["jobs"] = results
		}
		if err := writeJSON(c.out, out); err != nil {
			return err
		}
		return notPromoted
	}
	printOutcomes(c.out, c.errOut, results, "promoted")
	fmt.Fprintf(c.out, "promoted %d delayed jobs in %s\n", n, queue)
	return notPromoted
}
