package main

import (
	"context"
	"fmt"
	"io"
)

func init() {
	commands["failures"] = commandInfo{
		summary: "group a queue's failed jobs by error (--since 1h: what broke lately), with the filter that retries a group",
		make:    func(m *Main) command { return &failuresCmd{out: m.Stdout} },
	}
}

// failuresCmd is `drover failures`: the dashboard's failures-by-error view.
type failuresCmd struct {
	out io.Writer
}

func (c *failuresCmd) Run(ctx context.Context, args []string) error {
	fs := newQueueFlags("failures", c.out, "Usage: drover failures <queue> [--since 1h] [--json]\n\n"+
		"Groups the queue's failed jobs by error, ids and numbers in the messages set aside, biggest group\n"+
		"first, each with the filter that lists or retries it (drover jobs/retry --filter '...').")
	since := durationFlag(fs.FlagSet, "since", 0, "only the jobs that failed within this long (e.g. 1h, 15m); 0 = all")
	asJSON := fs.jsonFlag()
	queues, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(queues) != 1 {
		return usagef("failures needs one <queue>")
	}
	if *since < 0 {
		return usagef("--since must not be negative, got %s", *since)
	}
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	rep, err := ins.FailureGroupsWithin(ctx, queues[0], *since)
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c.out, rep)
	}
	window := ""
	if *since > 0 {
		window = " in the last " + since.String()
	}
	if len(rep.Groups) == 0 {
		fmt.Fprintf(c.out, "no failed jobs%s\n", window)
		return nil
	}
	t := newTable(c.out, "COUNT", "UNRECOVERABLE", "LAST", "ERROR", "FILTER")
	total := 0
	for _, g := range rep.Groups {
		total += g.Count
		t.row(g.Count, g.Unrecoverable, when(g.LastSeen), clip(g.Error, 60), g.Filter)
	}
	if err := t.flush(); err != nil {
		return err
	}
	fmt.Fprintf(c.out, "%d failed jobs%s in %d groups\n", total, window, len(rep.Groups))
	if rep.Truncated {
		fmt.Fprintf(c.out, "(more failed jobs than the scan limit: the newest %d were read)\n", rep.Scanned)
	}
	return nil
}
