package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/seed40057009/drover/dashboard"
)

func init() {
	commands["promote"] = commandInfo{
		summary: "run delayed jobs now (all of a queue, or the given ids)",
		make:    func(m *Main) command { return &promoteCmd{out: m.Stdout, errOut: m.Stderr} },
	}
}

// promoteCmd is `drover promote`, audited as promote-all, or promote-job
// per id.
type promoteCmd struct {
	out, errOut io.Writer
}

func (c *promoteCmd) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("promote", flag.ContinueOnError)
	fs.SetOutput(c.out)
	var rf redisFlags
	rf.register(fs)
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintln(c.out, "Usage: drover promote <queue> [<id>...] [--json]\n\nMoves delayed jobs (scheduled, or waiting for backoff) to wait now; they keep their attempts.")
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("promote needs a <queue>")
	}
	ins, closeRedis, err := rf.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	queue, ids := pos[0], pos[1:]
	n := 0
	if len(ids) == 0 {
		n, err = ins.PromoteAll(ctx, queue)
		rf.record(ctx, c.errOut, dashboard.AuditEntry{Action: "promote-all", Queue: queue, Jobs: n}, err)
		if err != nil {
			return err
		}
	}
	for _, id := range ids {
		err := ins.PromoteJob(ctx, queue, id)
		rf.record(ctx, c.errOut, dashboard.AuditEntry{Action: "promote-job", Queue: queue, JobID: id, Jobs: jobsIf(err)}, err)
		if err != nil {
			return err
		}
		n++
	}
	if *asJSON {
		return writeJSON(c.out, map[string]any{"queue": queue, "promoted": n})
	}
	fmt.Fprintf(c.out, "promoted %d delayed jobs in %s\n", n, queue)
	return nil
}
