package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"

	"github.com/seed40057009/drover"
)

func init() {
	commands["add"] = commandInfo{
		summary: "add a job to a queue (data and options as JSON, BullMQ option names)",
		make:    func(m *Main) command { return &addCmd{out: m.Stdout} },
	}
}

type addCmd struct {
	out io.Writer
}

func (c *addCmd) Run(ctx context.Context, args []string) error {
	fs := newQueueFlags("add", c.out, "Usage: drover add <queue> <name> [--data JSON] [--opts JSON] [--json]\n\nAdds one job. Options use BullMQ's names; times are milliseconds.")
	data := fs.String("data", "{}", "job data as JSON")
	opts := fs.String("opts", "{}", `job options as JSON, e.g. '{"attempts":3,"backoff":{"type":"exponential","delay":1000}}'`)
	asJSON := fs.jsonFlag()
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 2 {
		// A third word is most often the data, given without --data.
		return usagef("add takes <queue> <name> and flags; unexpected %q (data goes in --data, options in --opts)", clip(pos[2], 60))
	}
	if len(pos) != 2 {
		return usagef("add needs <queue> <name>")
	}
	if !json.Valid([]byte(*data)) {
		return usagef("--data is not valid JSON: %s", clip(*data, 60))
	}
	jobOpts, err := drover.ParseJobOptions([]byte(*opts))
	if err != nil {
		return usagef("--opts: %v", err)
	}
	q, closeRedis, err := fs.redis.queue(ctx, pos[0])
	if err != nil {
		return err
	}
	defer closeRedis()
	if b := jobOpts.Backoff; b != nil && b.Type != drover.BackoffFixed && b.Type != drover.BackoffExponential {
		// A custom strategy is the workers' (a Node worker's settings, a
		// drover worker's BackoffStrategies), which the CLI cannot see: take
		// the name as given, as BullMQ's Queue.add does. A library Queue
		// checks it against QueueOptions.BackoffTypes instead.
		q, err = drover.NewQueue(fs.redis.ins.Client(), pos[0], &drover.QueueOptions{Prefix: fs.redis.prefix,
			Logger: fs.redis.logger, BackoffTypes: []string{b.Type}})
		if err != nil {
			return err
		}
		defer func() { _ = q.Close() }()
	}
	res, err := q.Add(ctx, pos[1], json.RawMessage(*data), jobOpts)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c.out, addReply{Queue: pos[0], ID: res.Job.ID, Outcome: res.Outcome.String(), ExistingState: res.ExistingState})
	}
	switch res.Outcome {
	case drover.AddCreated, drover.AddReAdded:
		fmt.Fprintf(c.out, "added job %s to %s\n", res.Job.ID, pos[0])
	case drover.AddDeduplicated:
		// It read "not added: deduplicated of job 6 (waiting)".
		dedupID := ""
		if jobOpts != nil && jobOpts.Deduplication != nil {
			dedupID = fmt.Sprintf(" %q", jobOpts.Deduplication.ID)
		}
		fmt.Fprintf(c.out, "not added: job %s (%s) holds deduplication id%s\n", res.Job.ID, res.ExistingState, dedupID)
	case drover.AddDuplicate:
		fmt.Fprintf(c.out, "not added: job %s already exists (%s)\n", res.Job.ID, res.ExistingState)
	default:
		fmt.Fprintf(c.out, "not added: %s of job %s (%s)\n", res.Outcome, res.Job.ID, res.ExistingState)
	}
	return nil
}

// addReply is `drover add --json`: the job's id and what the add did; the
// state of the job already there only when the add was a duplicate.
type addReply struct {
	Queue         string          `json:"queue"`
	ID            string          `json:"id"`
	Outcome       string          `json:"outcome"`
	ExistingState drover.JobState `json:"existingState,omitempty"`
}
