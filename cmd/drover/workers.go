package main

import (
	"context"
	"fmt"
	"io"
	"strconv"

	"github.com/seed40057009/drover/inspect"
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
	t := newTable(c.out, "NAME", "ADDR", "AGE", "IDLE", "RUNNING", "STATE")
	for _, w := range ws {
		name, running := w.Name, strconv.Itoa(w.Running)
		if name == "" {
			// An unnamed worker leaves no name on the jobs it runs.
			name, running = "-", "-"
		}
		t.row(name, w.Addr, w.Age, w.Idle, running, workerState(w))
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "%d workers\n", len(ws))
	return nil
}

// workerState says what a worker connection is doing. A worker with free
// slots waits for jobs while it runs others, so waiting is idle only when
// it runs none.
func workerState(w inspect.WorkerInfo) string {
	switch {
	case !w.Waiting:
		return "busy"
	case w.Running > 0:
		return "running jobs, waiting for more"
	case w.Running == 0:
		return "idle: waiting for jobs"
	}
	return "waiting for jobs"
}
