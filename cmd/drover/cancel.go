package main

import (
	"context"
	"fmt"
	"io"

	"github.com/seed40057009/drover/dashboard"
)

func init() {
	commands["cancel"] = commandInfo{
		summary: "cancel a running job (the drover worker running it, in any process, stops it)",
		make:    func(m *Main) command { return &cancelCmd{out: m.Stdout, errOut: m.Stderr} },
	}
}

// cancelCmd is `drover cancel`, audited as cancel-job.
type cancelCmd struct {
	out, errOut io.Writer
}

func (c *cancelCmd) Run(ctx context.Context, args []string) (err error) {
	fs := newQueueFlags("cancel", c.out, "Usage: drover cancel <queue> <id> [--reason text] [--retry] [--json]\n\n"+
		"Cancels the running attempt of an active job: the drover worker running it, in any process,\n"+
		"cancels the processor's context and fails the job (for good, unless --retry). A job run by a\n"+
		"Node BullMQ worker, or not running, is left alone and the command fails saying so.")
	reason := fs.String("reason", "", "why; stored as the job's failedReason \"cancelled: <reason>\"")
	retry := fs.Bool("retry", false, "retry the job per its attempts instead of failing it for good")
	asJSON := fs.jsonFlag()
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("cancel needs <queue> <id>")
	}
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	queue, id := pos[0], pos[1]
	e := dashboard.AuditEntry{Action: "cancel-job", Queue: queue, JobID: id, Detail: fmt.Sprintf("reason=%q retry=%t", *reason, *retry)}
	defer func() { fs.redis.record(ctx, c.errOut, e, err) }()
	if err := ins.CancelJob(ctx, queue, id, *reason, *retry); err != nil {
		return err
	}
	e.Jobs = 1
	if *asJSON {
		return writeJSON(c.out, map[string]any{"queue": queue, "id": id, "cancelled": true, "retry": *retry})
	}
	fmt.Fprintf(c.out, "cancel request delivered to the worker running job %s in %s\n", id, queue)
	return nil
}
