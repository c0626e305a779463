package main

import (
	"context"
	"fmt"
	"io"

	"github.com/seed40057009/drover/dashboard"
)

func init() {
	commands["pause"] = commandInfo{
		summary: "stop workers from taking a queue's jobs (running jobs finish)",
		make:    func(m *Main) command { return &pauseCmd{out: m.Stdout, errOut: m.Stderr, pause: true} },
	}
	commands["resume"] = commandInfo{
		summary: "let workers take a paused queue's jobs again",
		make:    func(m *Main) command { return &pauseCmd{out: m.Stdout, errOut: m.Stderr} },
	}
}

// pauseCmd is `drover pause` and `drover resume`, audited as pause and
// resume, one entry per queue.
type pauseCmd struct {
	out, errOut io.Writer
	pause       bool
}

func (c *pauseCmd) Run(ctx context.Context, args []string) error {
	name, does := "resume", "Lets workers take the queues' jobs again."
	if c.pause {
		name, does = "pause", "Stops workers (Node's and drover's) from taking the queues' jobs; running jobs finish; adds still work."
	}
	fs := newQueueFlags(name, c.out, fmt.Sprintf("Usage: drover %s <queue>... [--json]\n\n%s", name, does))
	asJSON := fs.jsonFlag()
	queues, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(queues) == 0 {
		return usagef("%s needs a <queue>", name)
	}
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	// A queue named twice is acted on and reported once.
	queues = uniqueArgs(queues)
	already := make(map[string]bool, len(queues))
	for _, q := range queues {
		// Check every name first: a typo must not pause half the list.
		info, err := ins.QueueInfo(ctx, q)
		if err != nil {
			return err
		}
		// Said as it is: "q: paused" for a queue paused before told of
		// a change that was not made.
		already[q] = info.Paused == c.pause
	}
	unchanged := []string{}
	for _, q := range queues {
		if c.pause {
			err = ins.Pause(ctx, q)
		} else {
			err = ins.Resume(ctx, q)
		}
		fs.redis.record(ctx, c.errOut, dashboard.AuditEntry{Action: name, Queue: q}, err)
		if err != nil {
			return err
		}
		if already[q] {
			unchanged = append(unchanged, q)
		}
		switch {
		case *asJSON:
		case already[q] && c.pause:
			fmt.Fprintf(c.out, "%s: already paused\n", q)
		case already[q]:
			fmt.Fprintf(c.out, "%s: not paused, nothing to resume\n", q)
		default:
			fmt.Fprintf(c.out, "%s: %sd\n", q, name)
		}
	}
	if *asJSON {
		return writeJSON(c.out, map[string]any{"queues": queues, "paused": c.pause, "unchanged": unchanged})
	}
	return nil
}
