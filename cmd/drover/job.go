package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
)

func init() {
	commands["job"] = commandInfo{
		summary: "show one job's retry state: attempts, next run, attempt timeline, errors, logs",
		make:    func(m *Main) command { return &jobCmd{out: m.Stdout, errOut: m.Stderr} },
	}
}

type jobCmd struct {
	out, errOut io.Writer
}

func (c *jobCmd) Run(ctx context.Context, args []string) error {
	fs := newQueueFlags("job", c.out, "Usage: drover job [<queue>] <id> [--json]\n\nThe retry-state inspector: where the job stands in its retry life and how it got there.\n"+
		"Without a queue, the job is looked for in every queue under the prefix; when several hold the id, they are listed and the exit status is 2 (name the queue).")
	asJSON := fs.jsonFlag()
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) != 1 && len(pos) != 2 {
		return usagef("job needs [<queue>] <id>, got %q", pos)
	}
	if err := checkJobIDs(pos[len(pos)-1:]); err != nil {
		return err
	}
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	var incomplete error
	if len(pos) == 1 {
		matches, err := ins.FindJob(ctx, pos[0])
		// A damaged queue is named; the others' matches stand.
		skipped, partial := errors.AsType[*inspect.SkippedQueuesError](err)
		if err != nil && !partial {
			return err
		}
		if partial {
			// Shown after the job, as drover jobs does: exit 1, the
			// search was not complete.
			incomplete = fmt.Errorf("the search for job %q was not complete: %w", pos[0], skipped)
		}
		switch len(matches) {
		case 0:
			if partial {
				return fmt.Errorf("%w: no readable queue under prefix %q holds job %q; %w", drover.ErrJobNotFound, ins.Prefix(), pos[0], skipped)
			}
			return fmt.Errorf("%w: no queue under prefix %q holds job %q", drover.ErrJobNotFound, ins.Prefix(), pos[0])
		case 1:
			pos = []string{matches[0].Queue, pos[0]}
		default:
			// No job was shown: the queue argument is missing (exit 2).
			// It exited 0, so `drover job <id> --json` in a script went
			// on with the list of matches for the job.
			ambiguous := usagef("%d queues hold a job %q; name one: drover job <queue> %s", len(matches), pos[0], pos[0])
			if *asJSON {
				return cmp.Or(writeJSON(c.out, matches), ambiguous)
			}
			t := newTable(c.out, "QUEUE", "NAME", "STATE")
			for _, m := range matches {
				t.row(m.Queue, m.Name, m.State)
			}
			return cmp.Or(t.flush(), ambiguous)
		}
	}
	d, err := ins.Job(ctx, pos[0], pos[1])
	if err != nil {
		return err
	}
	if *asJSON {
		return cmp.Or(writeJSON(c.out, d), incomplete)
	}
	noWorker := false
	if d.Lock != nil && !d.Lock.Held {
		// Only a worker runs the stalled check that recovers the job.
		ws, err := ins.Workers(ctx, pos[0])
		if err != nil {
			return err
		}
		noWorker = len(ws) == 0
	}
	c.print(d, noWorker)
	return incomplete
}

// print shows d; noWorker says no worker is connected to its queue.
func (c *jobCmd) print(d *inspect.JobDetail, noWorker bool) {
	w := c.out
	b := d.Budget
	fmt.Fprintf(w, "job %s %q in queue %s\n", d.ID, d.Name, d.Queue)
	fmt.Fprintf(w, "  retry state  %s (state %s)\n", retryLabel(d.JobSummary), d.State)
	if d.State == drover.StateFailed {
		// A job failed for good has no attempts "left".
		fmt.Fprintf(w, "  attempts     %d of %d used (%d started)\n", b.Made, b.Allowed, b.Started)
	} else {
		fmt.Fprintf(w, "  attempts     %d of %d used, %d left (%d started)\n", b.Made, b.Allowed, b.Left, b.Started)
	}
	if !d.NextRun.IsZero() {
		fmt.Fprintf(w, "  next run     %s (%s)\n", when(d.NextRun), until(d.NextRun))
	}
	if len(d.Progress) > 0 {
		fmt.Fprintf(w, "  progress     %s\n", clip(string(d.Progress), 200))
	}
	if bo := d.Backoff; bo != nil {
		switch bo.Type {
		case "fixed", "exponential":
			fmt.Fprintf(w, "  backoff      %s %s, jitter %.0f%%\n", bo.Type, bo.Delay, bo.Jitter*100)
		default:
			fmt.Fprintf(w, "  backoff      custom strategy %q\n", bo.Type)
		}
	}
	if d.StalledCount > 0 {
		fmt.Fprintf(w, "  stalled      %d times\n", d.StalledCount)
	}
	if d.Lock != nil {
		if d.Lock.Held {
			fmt.Fprintf(w, "  lock         held, expires in %s\n", d.Lock.TTL.Round(time.Millisecond))
		} else if noWorker {
			fmt.Fprintln(w, "  lock         missing: the job is stalling; no worker is connected to run the stalled check that recovers it")
		} else {
			fmt.Fprintln(w, "  lock         missing: the job is stalling; the next stalled check recovers it")
		}
	}
	if p := d.Parent; p != nil {
		fmt.Fprintf(w, "  flow parent  %s\n", refName(*p))
	}
	if ch := d.Children; ch != nil {
		fmt.Fprintf(w, "  children     %d pending, %d completed, %d failed the parent, %d failed and ignored\n", ch.Pending, ch.Completed, ch.Failed, ch.Ignored)
		for _, r := range ch.Waiting {
			fmt.Fprintf(w, "    pending    %s\n", refName(r))
		}
		if more := ch.Pending - int64(len(ch.Waiting)); more > 0 {
			fmt.Fprintf(w, "    and %d more pending\n", more)
		}
	}
	fmt.Fprintf(w, "  created      %s\n", when(d.Timestamp))
	if d.FailedReason != "" {
		fmt.Fprintf(w, "  last error   %s\n", d.FailedReason)
	}
	fmt.Fprintf(w, "\nattempt timeline (%s):\n", d.TimelineSource)
	if d.TimelineSource == inspect.TimelineDerived && len(d.Timeline) > 0 {
		fmt.Fprintln(w, "  (no drover worker recorded these attempts: rebuilt from the job's counters, last attempt's times only)")
	}
	if len(d.Timeline) == 0 {
		fmt.Fprintln(w, "  no attempt yet")
	}
	if d.TimelineOmitted > 0 {
		fmt.Fprintf(w, "  #1-#%d not kept (drover keeps the newest 25 attempts)\n", d.TimelineOmitted)
	}
	// The outcome column is as wide as its longest entry, so times line up.
	label := func(a inspect.Attempt) string {
		if a.Unrecoverable {
			return "failed: unrecoverable"
		}
		if a.Outcome == inspect.OutcomeFailedUnrun {
			return "failed without running"
		}
		if a.Outcome == inspect.OutcomeFreshAttempts {
			return "retried with fresh attempts"
		}
		return a.Outcome
	}
	width := 13
	for _, a := range d.Timeline {
		width = max(width, len(label(a)))
	}
	for i, a := range d.Timeline {
		line := fmt.Sprintf("  #%-3d %-*s", a.N, width, label(a))
		if a.Outside {
			line = fmt.Sprintf("  %-4s %-*s", "--", width, label(a))
			if !a.End.IsZero() {
				line += " " + a.End.Local().Format("15:04:05.000") + " (no attempt ran)"
			}
			if f := a.Fresh; f != nil {
				line += fmt.Sprintf(" after %d started, %d spent", f.Started, f.Made)
				if f.ResetStarted {
					line += "; numbered from #1 again"
				}
			}
		} else if !a.Recorded && d.TimelineSource == inspect.TimelineDrover {
			line += " (no drover record)"
		}
		if !a.Start.IsZero() {
			line += " " + a.Start.Local().Format("15:04:05.000")
			if !a.End.IsZero() {
				line += fmt.Sprintf(" ran %s", a.End.Sub(a.Start.Time).Round(time.Millisecond))
			}
		}
		if a.Error != "" {
			line += "  " + clip(firstLine(a.Error), 70)
		}
		fmt.Fprintln(w, line)
		switch {
		case finalFailure(a.Outcome) && i < len(d.Timeline)-1:
			// Failed for good, yet it ran again: someone retried it.
			fmt.Fprintln(w, "        └ retried by hand")
		case a.Outcome == drover.OutcomeRateLimited.String() && i < len(d.Timeline)-1:
			fmt.Fprintln(w, "        └ waited for the rate limit")
		case a.Backoff == 0:
		case i < len(d.Timeline)-1:
			fmt.Fprintf(w, "        └ %s %s\n", waitName(a.Outcome), a.Backoff)
		default:
			fmt.Fprintf(w, "        └ %s %s, next run %s (%s)\n", waitName(a.Outcome), a.Backoff, when(d.NextRun), until(d.NextRun))
		}
	}
	if n := len(d.Stacktrace); n > 0 {
		fmt.Fprintf(w, "\nlast stack trace (%d kept):\n%s\n", n, indent(d.Stacktrace[n-1]))
	}
	if len(d.Logs) > 0 {
		from := max(0, len(d.Logs)-10)
		fmt.Fprintf(w, "\nlogs (last %d of %d):\n", len(d.Logs)-from, d.LogCount)
		for _, l := range d.Logs[from:] {
			fmt.Fprintln(w, "  "+l)
		}
	}
	if len(d.ReturnValue) > 0 {
		fmt.Fprintf(w, "\nreturn value: %s\n", clip(string(d.ReturnValue), 500))
	}
	fmt.Fprintf(w, "\ndata: %s\n", clip(string(d.Data), 500))
}

// retryLabel is a job's retry state for people; a failed job's says why it
// failed for good ("failed for good: unrecoverable").
func retryLabel(j inspect.JobSummary) string {
	if j.State == drover.StateFailed && j.FailedFor != "" {
		return j.FailedFor.Label()
	}
	return string(j.RetryState)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func indent(s string) string {
	return "  " + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n  ")
}

// waitName names the wait after an attempt with a Backoff: the backoff of a
// failed attempt (drover.OutcomeRetryDelayed) or the job's own Delay
// (drover.OutcomeDelayed).
func waitName(outcome string) string {
	if outcome == drover.OutcomeDelayed.String() {
		return "delay"
	}
	return "backoff"
}

// refName names a flow job as queue/id (prefix:queue/id under another
// prefix).
func refName(r inspect.JobRef) string {
	if r.Prefix != "" {
		return r.Prefix + ":" + r.Queue + "/" + r.ID
	}
	return r.Queue + "/" + r.ID
}

// finalFailure reports whether an attempt's outcome left its job failed for
// good (drover.Outcome.Failed, or inspect's failure outside an attempt).
func finalFailure(outcome string) bool {
	if outcome == inspect.OutcomeFailedUnrun {
		return true
	}
	var o drover.Outcome
	return o.UnmarshalText([]byte(outcome)) == nil && o.Failed()
}
