package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/seed40057009/drover"
)

func init() {
	commands["clean"] = commandInfo{
		summary: "remove old jobs of one state (completed by default)",
		make:    func(m *Main) command { return &cleanCmd{out: m.Stdout} },
	}
}

type cleanCmd struct {
	out io.Writer
}

func (c *cleanCmd) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("clean", flag.ContinueOnError)
	fs.SetOutput(c.out)
	var rf redisFlags
	rf.register(fs)
	state := fs.String("state", "completed", "state to clean: completed, failed, delayed, waiting, prioritized, paused")
	grace := fs.Duration("grace", 0, "keep jobs younger than this (finished for completed and failed)")
	limit := fs.Int("limit", 0, "remove at most this many (0 = up to 10000 per call)")
	asJSON := fs.Bool("json", false, "print JSON")
	fs.Usage = func() {
		fmt.Fprintln(c.out, "Usage: drover clean <queue> [--state completed] [--grace 24h] [--limit N] [--json]\n\nRemoves jobs of one state older than the grace period; jobs a worker holds are skipped.")
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("clean needs one <queue>, got %q", pos)
	}
	ins, closeRedis, err := rf.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	ids, err := ins.Clean(ctx, pos[0], drover.JobState(*state), *grace, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		if ids == nil {
			ids = []string{}
		}
		return writeJSON(c.out, map[string]any{"queue": pos[0], "state": *state, "removed": len(ids), "ids": ids})
	}
	fmt.Fprintf(c.out, "removed %d %s jobs older than %s from %s\n", len(ids), *state, *grace, pos[0])
	return nil
}
