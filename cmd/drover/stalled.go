package main

import (
	"context"
	"fmt"
	"io"
	"time"
)

func init() {
	commands["stalled"] = commandInfo{
		summary: "show a queue's running jobs with their locks, which are stalling, and the jobs that stalled before",
		make:    func(m *Main) command { return &stalledCmd{out: m.Stdout} },
	}
}

// stalledCmd is `drover stalled`: the dashboard's stalled view in a
// terminal, for the on-call question "is a worker dead, and which jobs did
// it leave?".
type stalledCmd struct {
	out io.Writer
}

func (c *stalledCmd) Run(ctx context.Context, args []string) error {
	fs := newQueueFlags("stalled", c.out, "Usage: drover stalled <queue> [--json]\n\n"+
		"Lists the queue's active jobs with their lock (held, time left, holder) and whether the last\n"+
		"stalled check marked them: a job whose lock is gone is stalling, and the next check moves it\n"+
		"back to wait (or fails it past maxStalledCount). Then the jobs that stalled before, in any state.")
	asJSON := fs.jsonFlag()
	queues, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(queues) != 1 {
		return usagef("stalled needs one <queue>")
	}
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	rep, err := ins.Stalled(ctx, queues[0])
	if err != nil {
		return err
	}
	if *asJSON {
		return writeJSON(c.out, rep)
	}
	stalling := 0
	if len(rep.Active) == 0 {
		fmt.Fprintln(c.out, "no active jobs")
	} else {
		t := newTable(c.out, "ID", "NAME", "ATTEMPT", "RUNNING", "WORKER", "LOCK", "STALLS")
		for _, a := range rep.Active {
			running := "-"
			if !a.ProcessedOn.IsZero() {
				running = time.Since(a.ProcessedOn.Time).Round(time.Second).String()
			}
			lock := "held, " + a.Lock.TTL.Round(time.Millisecond).String() + " left"
			switch {
			case !a.Lock.Held:
				lock = "GONE: stalling, the next stalled check recovers it"
				stalling++
			case a.Candidate:
				lock += " (marked by the last check; renewed since)"
			}
			t.row(a.ID, clip(a.Name, 30), a.AttemptsStarted, running, orDash(a.ProcessedBy), lock, a.StalledCount)
		}
		if err := t.flush(); err != nil {
			return err
		}
		fmt.Fprintf(c.out, "%d active, %d stalling\n", len(rep.Active), stalling)
		if stalling > 0 {
			// Only a worker runs the stalled check: with none connected,
			// "the next stalled check recovers it" promised a recovery
			// that nothing was going to make.
			ws, err := ins.Workers(ctx, queues[0])
			if err != nil {
				return err
			}
			if len(ws) == 0 {
				fmt.Fprintf(c.out, "no worker is connected to %s: the stalling jobs stay active until one starts (its stalled check recovers them)\n", queues[0])
			}
		}
	}
	fmt.Fprintln(c.out)
	if len(rep.Stalled) == 0 {
		fmt.Fprintln(c.out, "no job has stalled")
	} else {
		t := newTable(c.out, "ID", "NAME", "STATE", "STALLS", "ATTEMPTS", "REASON")
		for _, j := range rep.Stalled {
			t.row(j.ID, clip(j.Name, 30), j.State, j.StalledCount, fmt.Sprintf("%d/%d", j.Budget.Made, j.Budget.Allowed), clip(j.FailedReason, 60))
		}
		if err := t.flush(); err != nil {
			return err
		}
		fmt.Fprintf(c.out, "%d jobs stalled at least once\n", len(rep.Stalled))
	}
	if rep.Truncated {
		fmt.Fprintf(c.out, "(a state held more jobs than the scan limit: only the newest of each were looked at, %d in all)\n", rep.Scanned)
	}
	return nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
