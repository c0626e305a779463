package main

import (
	"context"
	"flag"
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
	name := "resume"
	if c.pause {
		name = "pause"
	}
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(c.out)
	var rf redisFlags
	rf.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintf(c.out, "Usage: drover %s <queue>... [--json]\n\n", name)
		if c.pause {
			fmt.Fprintln(c.out, "Stops workers (Node's and drover's) from taking the queues' jobs; running jobs finish; adds still work.")
		} else {
			fmt.Fprintln(c.out, "Lets workers take the queues' jobs again.")
		}
		fs.PrintDefaults()
	}
	queues, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(queues) == 0 {
		return usagef("%s needs a <queue>", name)
	}
	ins, closeRedis, err := rf.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	for _, q := range queues {
		// Check every name first: a typo must not pause half the list.
		if _, err := ins.QueueInfo(ctx, q); err != nil {
			return err
		}
	}
	for _, q := range queues {
		if c.pause {
			err = ins.Pause(ctx, q)
		} else {
			err = ins.Resume(ctx, q)
		}
		rf.record(ctx, c.errOut, dashboard.AuditEntry{Action: name, Queue: q}, err)
		if err != nil {
			return err
		}
		if !*asJSON {
			fmt.Fprintf(c.out, "%s: %sd\n", q, name)
		}
	}
	if *asJSON {
		return writeJSON(c.out, map[string]any{"queues": queues, "paused": c.pause})
	}
	return nil
}
