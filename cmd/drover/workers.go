package main

import (
	"context"
	"fmt"
	"io"
)

func init() {
	commands["workers"] = commandInfo{
		summary: "list the workers (Node's and drover's) connected to a queue",
		make:    func(m *Main) command { return &workersCmd{out: m.Stdout} },
	}
}

// workersCmd is `drover workers`.
type workersCmd struct {
	out io.Writer
}

func (c *workersCmd) Run(ctx context.Context, args []string) error {
	fs := newQueueFlags("workers", c.out, "Usage: drover workers <queue> [--json]\n\n"+
		"Lists the workers connected to the queue, Node BullMQ's and drover's, as BullMQ's getWorkers() does (CLIENT LIST).")
	asJSON := fs.jsonFlag()
	queues, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(queues) != 1 {
		return usagef("workers needs one <queue>")
	}
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	if _, err := ins.QueueInfo(ctx, queues[0]); err != nil {
		return err
	}
	ws, err := ins.Workers(ctx, queues[0])
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c.out, ws)
	}
	t := newTable(c.out, "NAME", "ADDR", "AGE", "IDLE", "STATE")
	for _, w := range ws {
		name := w.Name
		if name == "" {
			name = "-"
		}
		state := "busy"
		if w.Waiting {
			state = "waiting for jobs"
		}
		t.row(name, w.Addr, w.Age, w.Idle, state)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "%d workers\n", len(ws))
	return nil
}
