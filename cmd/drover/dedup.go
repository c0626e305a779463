package main

import (
	"context"
	"fmt"
	"io"

	"github.com/seed40057009/drover/dashboard"
)

func init() {
	commands["dedup"] = commandInfo{
		summary: "show which job holds a deduplication id, or free the id (--release)",
		make:    func(m *Main) command { return &dedupCmd{out: m.Stdout, errOut: m.Stderr} },
	}
}

// dedupCmd is `drover dedup`: a read, or with --release an action audited
// as release-dedup.
type dedupCmd struct {
	out, errOut io.Writer
}

func (c *dedupCmd) Run(ctx context.Context, args []string) (err error) {
	fs := newQueueFlags("dedup", c.out, "Usage: drover dedup <queue> <dedup-id> [--release] [--json]\n\n"+
		"Shows which job holds a deduplication id: adds with that id are deduplicated against it (Node's\n"+
		"and drover's alike) until the id is freed, when the job finishes (an id without TTL), when its\n"+
		"TTL runs out, or when it is released. --release frees it now; the job is left alone.")
	release := fs.Bool("release", false, "free the id now, so the next add with it creates a job")
	asJSON := fs.jsonFlag()
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usagef("dedup needs <queue> <dedup-id>")
	}
	queue, id := pos[0], pos[1]
	if id == "" {
		return usagef("dedup needs a non-empty <dedup-id>")
	}
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	d, err := ins.Deduplication(ctx, queue, id)
	if err != nil {
		return err
	}
	if !*release {
		if *asJSON {
			return writeJSON(c.out, d)
		}
		switch {
		case d.JobID == "":
			fmt.Fprintf(c.out, "deduplication id %q of %s is free: the next add with it creates a job\n", id, queue)
		case d.Expires.IsZero():
			fmt.Fprintf(c.out, "deduplication id %q of %s is held by job %s (%s), with no expiry: freed when the job finishes or is removed\n", id, queue, d.JobID, d.State)
		default:
			fmt.Fprintf(c.out, "deduplication id %q of %s is held by job %s (%s) until %s (%s)\n", id, queue, d.JobID, d.State,
				when(d.Expires), until(d.Expires))
		}
		return nil
	}
	e := dashboard.AuditEntry{Action: "release-dedup", Queue: queue, JobID: d.JobID, Detail: fmt.Sprintf("dedup=%q", id)}
	defer func() { fs.redis.record(ctx, c.errOut, e, err) }()
	released, err := ins.ReleaseDeduplication(ctx, queue, id)
	if err != nil {
		return err
	}
	// Whether the id was freed by this call: the log answers "who freed
	// it", not only "who asked".
	e.Detail += fmt.Sprintf(" released=%t", released)
	if *asJSON {
		return writeJSON(c.out, map[string]any{"queue": queue, "id": id, "released": released, "jobId": d.JobID})
	}
	if !released {
		fmt.Fprintf(c.out, "deduplication id %q of %s was free: nothing to release\n", id, queue)
		return nil
	}
	fmt.Fprintf(c.out, "released deduplication id %q of %s (held by job %s, which is left alone)\n", id, queue, d.JobID)
	return nil
}
