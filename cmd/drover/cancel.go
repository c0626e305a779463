package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
)

func init() {
	commands["cancel"] = commandInfo{
		summary: "cancel a job: a queued one fails at once, a running one is stopped by the drover worker running it",
		make:    func(m *Main) command { return &cancelCmd{out: m.Stdout, errOut: m.Stderr} },
	}
}

// cancelCmd is `drover cancel`, audited as cancel-job.
type cancelCmd struct {
	out, errOut io.Writer
}

func (c *cancelCmd) Run(ctx context.Context, args []string) (err error) {
	fs := newQueueFlags("cancel", c.out, "Usage: drover cancel <queue> <id> [--reason text] [--retry] [--json]\n\n"+
		"Cancels a job. A job not running yet (waiting, prioritized, delayed) fails for good at once.\n"+
		"For an active job, the drover worker running it, in any process, cancels the processor's\n"+
		"context and fails the job (for good, unless --retry, which needs a running job). A finished\n"+
		"job, or one run by a Node BullMQ worker, is left alone and the command fails saying so.")
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
	if err := checkJobIDs(pos[1:]); err != nil {
		return err
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
		if *retry && errors.Is(err, drover.ErrNotInState) {
			// The library's refusal names its Go option; say the flag.
			return fmt.Errorf("--retry needs a running job (without it a queued job fails for good): %w", err)
		}
		return err
	}
	e.Jobs = 1
	if *asJSON {
		return writeJSON(c.out, map[string]any{"queue": queue, "id": id, "cancelled": true, "retry": *retry})
	}
	fmt.Fprintf(c.out, "job %s in %s cancelled (a queued job is failed; a running one's worker got the request)\n", id, queue)
	return nil
}
