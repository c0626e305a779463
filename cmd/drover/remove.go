package main

import (
	"context"
	"fmt"
	"io"
)

func init() {
	commands["remove"] = commandInfo{
		summary: "delete jobs by id (with their logs and flow children), unless a worker holds them",
		make:    func(m *Main) command { return &removeCmd{out: m.Stdout, errOut: m.Stderr} },
	}
}

// removeCmd is `drover remove`, audited as remove-job per id (the
// dashboard's action).
type removeCmd struct {
	out, errOut io.Writer
}

func (c *removeCmd) Run(ctx context.Context, args []string) error {
	fs := newQueueFlags("remove", c.out, "Usage: drover remove <queue> <id>... [--json]\n\n"+
		"Deletes each job with its logs, in any state but active: a job a worker holds is refused.\n"+
		"As BullMQ's job.remove(), a flow parent's children (in any queue) go with it, and a child\n"+
		"is detached from its parent, which stops waiting for it. Every id is tried and each\n"+
		"one's outcome said; the exit status is non-zero when any was not removed.")
	asJSON := fs.jsonFlag()
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) < 2 {
		return usagef("remove needs <queue> and at least one <id>")
	}
	if err := checkJobIDs(pos[1:]); err != nil {
		return err
	}
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	queue, ids := pos[0], uniqueArgs(pos[1:])
	results, removed, err := eachID(ctx, &fs.redis, c.errOut, "remove-job", queue, ids, func(id string) error {
		return ins.RemoveJob(ctx, queue, id)
	})
	if err != nil {
		return err
	}
	var notRemoved error
	if removed < len(ids) {
		notRemoved = fmt.Errorf("%d of %d jobs not removed", len(ids)-removed, len(ids))
	}
	if *asJSON {
		if err := writeJSON(c.out, map[string]any{"queue": queue, "removed": removed, "jobs": results}); err != nil {
			return err
		}
		return notRemoved
	}
	printOutcomes(c.out, c.errOut, results, "removed")
	fmt.Fprintf(c.out, "removed %d of %d jobs from %s\n", removed, len(ids), queue)
	return notRemoved
}
