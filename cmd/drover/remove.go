package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
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
	results := make([]removeJobResult, 0, len(ids))
	removed := 0
	for _, id := range ids {
		err := ins.RemoveJob(ctx, queue, id)
		fs.redis.record(ctx, c.errOut, dashboard.AuditEntry{Action: "remove-job", Queue: queue, JobID: id, Jobs: jobsIf(err)}, err)
		if errors.Is(err, inspect.ErrQueueNotFound) {
			return err // so is every other id
		}
		r := removeJobResult{ID: id}
		if err != nil {
			r.Error = err.Error()
		} else {
			removed++
		}
		results = append(results, r)
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
	for _, r := range results {
		if r.Error != "" {
			fmt.Fprintf(c.out, "job %s: not removed: %s\n", r.ID, r.Error)
		} else {
			fmt.Fprintf(c.out, "job %s: removed\n", r.ID)
		}
	}
	fmt.Fprintf(c.out, "removed %d of %d jobs from %s\n", removed, len(ids), queue)
	return notRemoved
}

// removeJobResult is one id's outcome of `drover remove`.
type removeJobResult struct {
	ID    string `json:"id"`
	Error string `json:"error,omitempty"`
}
