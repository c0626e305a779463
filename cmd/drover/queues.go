package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/seed40057009/drover/inspect"
)

func init() {
	commands["queues"] = commandInfo{
		summary: "list the queues under a prefix with their job counts",
		make:    func(m *Main) command { return &queuesCmd{out: m.Stdout} },
	}
}

type queuesCmd struct {
	out io.Writer
}

// queueRow is one queue in `drover queues --json`.
type queueRow struct {
	inspect.QueueInfo
	Alerts []inspect.Alert `json:"alerts"`
}

func (c *queuesCmd) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("queues", flag.ContinueOnError)
	fs.SetOutput(c.out)
	var rf redisFlags
	rf.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintln(c.out, "Usage: drover queues [--redis URL] [--prefix P] [--json]\n\nLists the queues under the prefix (found by scanning its keys) with their job counts and storm alerts.")
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return usagef("queues takes no arguments, got %q", pos)
	}
	ins, closeRedis, err := rf.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	infos, err := ins.Overview(ctx)
	if err != nil {
		return err
	}
	rows := make([]queueRow, 0, len(infos))
	for _, info := range infos {
		r := queueRow{QueueInfo: info, Alerts: []inspect.Alert{}}
		if info.Counts.Delayed > 0 {
			st, err := ins.DelayedStats(ctx, info.Name)
			if err != nil {
				return err
			}
			r.Alerts = st.Alerts
		}
		rows = append(rows, r)
	}
	if *asJSON {
		return writeJSON(c.out, rows)
	}
	if len(rows) == 0 {
		fmt.Fprintf(c.out, "no queues under prefix %q\n", ins.Prefix())
		return nil
	}
	t := newTable(c.out, "QUEUE", "STATE", "WAITING", "PRIORITIZED", "ACTIVE", "DELAYED", "COMPLETED", "FAILED", "ALERTS")
	for _, r := range rows {
		state := "running"
		if r.Paused {
			state = "paused"
		}
		alerts := "-"
		if len(r.Alerts) > 0 {
			alerts = r.Alerts[0].Message
		}
		n := r.Counts
		t.row(r.Name, state, n.Waiting, n.Prioritized, n.Active, n.Delayed, n.Completed, n.Failed, alerts)
	}
	return t.flush()
}
