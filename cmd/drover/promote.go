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
	fs := newQueueFlags("promote", c.out, "Usage: drover promote <queue> [<id>...] [--json]\n\nMoves delayed jobs (scheduled, or waiting for backoff) to wait now; they keep their attempts.")
	asJSON := fs.jsonFlag()
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("promote needs a <queue>")
	}
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	queue, ids := pos[0], pos[1:]
	n := 0
	if len(ids) == 0 {
		n, err = ins.PromoteAll(ctx, queue)
		fs.redis.record(ctx, c.errOut, dashboard.AuditEntry{Action: "promote-all", Queue: queue, Jobs: n}, err)
		if err != nil {
			return err
		}
	}
	for _, id := range ids {
		err := ins.PromoteJob(ctx, queue, id)
		fs.redis.record(ctx, c.errOut, dashboard.AuditEntry{Action: "promote-job", Queue: queue, JobID: id, Jobs: jobsIf(err)}, err)
		if err != nil {
			return err
		}
		n++
	}
	if *asJSON {
		return writeJSON(c.out, map[string]any{"queue": queue, "promoted": n})
	}
	fmt.Fprintf(c.out, "promoted %d delayed jobs in %s\n", n, queue)
	return nil
}
