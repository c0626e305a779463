package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
)

func init() {
	commands["retry"] = commandInfo{
		summary: "retry failed jobs in paced chunks, by filter, with or without fresh attempts",
		make:    func(m *Main) command { return &retryCmd{out: m.Stdout, errOut: m.Stderr} },
	}
}

// retryCmd is `drover retry`, audited as retry-jobs, or retry-job per id
// (dry runs change nothing and are not).
type retryCmd struct {
	out, errOut io.Writer
}

// retryJobResult is one job of `drover retry <queue> <id>... --json`.
type retryJobResult struct {
	ID    string          `json:"id"`
	From  drover.JobState `json:"from,omitempty"`
	Error string          `json:"error,omitempty"`
}

func (c *retryCmd) Run(ctx context.Context, args []string) error {
	fs := newQueueFlags("retry", c.out, "Usage: drover retry <queue> [--state failed] [--filter EXPR] [--reset-attempts] [--dry-run] [--json]\n"+
		"       drover retry <queue> <id>... [--state failed] [--reset-attempts] [--json]\n\n"+
		"Moves failed (or completed) jobs back to wait in paced chunks. With ids, retries those jobs\n"+
		"of --state (failed unless --state completed), and jobs that wait for their backoff (they run now).")
	state := fs.String("state", "failed", "state to retry from: failed or completed")
	filterExpr := fs.String("filter", "", `only jobs matching: name=NAME reason=TEXT error=GROUP left<=N finished>=TIME`)
	reset := fs.Bool("reset-attempts", false, "give each job its whole attempt budget back")
	unrecoverable := fs.Bool("include-unrecoverable", false, "also retry failed jobs that failed as unrecoverable or by a failed child (left alone by default: they would fail again)")
	dryRun := fs.Bool("dry-run", false, "only count and list the jobs that would be retried")
	limit := fs.Int("limit", 0, "retry at most this many jobs, newest first (0 = all)")
	chunk := fs.Int("chunk", inspect.RetryChunkDefault, "jobs per chunk (0 = the default)")
	pause := fs.duration("pause", inspect.RetryPauseDefault, "pause between chunks, so the retry cannot cause a storm (0 = none)")
	progress := fs.Bool("progress", false, "draw the progress bar even when the output is not a terminal")
	asJSON := fs.jsonFlag()
	pos, err := fs.parse(args)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("retry needs a <queue>")
	}
	if err := checkJobIDs(pos[1:]); err != nil {
		return err
	}
	if *limit < 0 {
		return usagef("--limit must not be negative (0 = all), got %d", *limit)
	}
	if *chunk < 0 {
		return usagef("--chunk must not be negative, got %d", *chunk)
	}
	if st := drover.JobState(*state); st != drover.StateFailed && st != drover.StateCompleted {
		return usagef("--state %q: want failed or completed", *state)
	}
	filter, err := inspect.ParseFilter(*filterExpr)
	if err != nil {
		return usagef("--filter: %v", err)
	}
	if *pause < 0 {
		return usagef("--pause must not be negative (0 = none), got %s", *pause)
	}
	if *pause == 0 {
		*pause = -1 // inspect: negative = no pause
	}
	if len(pos) > 1 {
		// The bulk retry's flags, refused with ids before Redis is
		// opened: --limit, --chunk, --pause, --progress and
		// --include-unrecoverable were taken and ignored.
		var bulk []string
		fs.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "dry-run", "filter", "limit", "chunk", "pause", "progress", "include-unrecoverable":
				bulk = append(bulk, "--"+f.Name)
			}
		})
		if len(bulk) > 0 {
			return usagef("retry with job ids takes none of the bulk retry's flags, got %s", strings.Join(bulk, ", "))
		}
	}
	ins, closeRedis, err := fs.redis.inspector(ctx)
	if err != nil {
		return err
	}
	defer closeRedis()
	queue, ids := pos[0], uniqueArgs(pos[1:])

	if len(ids) > 0 {
		out := make([]retryJobResult, 0, len(ids))
		failed := 0
		for _, id := range ids {
			// --state applies to ids too: a completed job runs again only
			// when asked for with --state completed.
			from, err := ins.RetryJobFrom(ctx, queue, id, drover.JobState(*state), *reset)
			if errors.Is(err, drover.ErrNotInState) && (from == drover.StateFailed || from == drover.StateCompleted) {
				err = fmt.Errorf("%w (pass --state %s to retry it)", err, from)
			}
			fs.redis.record(ctx, c.errOut, dashboard.AuditEntry{Action: "retry-job", Queue: queue, JobID: id,
				Detail: fmt.Sprintf("resetAttempts=%t from=%s", *reset, from), Jobs: jobsIf(err)}, err)
			r := retryJobResult{ID: id, From: from}
			if err != nil {
				r.Error = err.Error()
				failed++
			}
			out = append(out, r)
		}
		if *asJSON {
			if err := writeJSON(c.out, out); err != nil {
				return err
			}
		} else {
			for _, r := range out {
				if r.Error != "" {
					fmt.Fprintf(c.errOut, "drover: job %s: not retried: %s\n", r.ID, tidyMessage(r.Error))
				} else {
					fmt.Fprintf(c.out, "job %s: retried from %s\n", r.ID, r.From)
				}
			}
		}
		if failed > 0 {
			return fmt.Errorf("%d of %d jobs not retried", failed, len(ids))
		}
		return nil
	}

	bar := &progressBar{w: rawWriter(c.out), label: "retrying"}
	opts := &inspect.RetryOptions{
		State: drover.JobState(*state), Filter: filter, ResetAttempts: *reset, IncludeUnrecoverable: *unrecoverable, Limit: *limit,
		ChunkSize: *chunk, Pause: *pause, DryRun: *dryRun,
	}
	if !*asJSON && (*progress || isTerminal(c.out)) {
		opts.Progress = bar.update
	}
	start := time.Now()
	res, err := ins.RetryJobs(ctx, queue, opts)
	bar.finish()
	if !*dryRun {
		e := dashboard.AuditEntry{Action: "retry-jobs", Queue: queue, Detail: fmt.Sprintf("state=%s filter=%q resetAttempts=%t includeUnrecoverable=%t limit=%d",
			*state, *filterExpr, *reset, *unrecoverable, *limit)}
		if res != nil {
			e.Jobs, e.JobIDs = res.Retried, res.IDs[:min(len(res.IDs), dashboard.AuditJobIDsMax)]
			e.Detail += fmt.Sprintf(": retried %d, skipped %d of %d", res.Retried, res.Skipped, res.Matched)
		}
		fs.redis.record(ctx, c.errOut, e, err)
	}
	if err != nil {
		if res != nil && res.Retried > 0 {
			return fmt.Errorf("retried %d of %d jobs, then: %w", res.Retried, res.Matched, err)
		}
		return err
	}
	if *asJSON {
		return writeJSON(c.out, res)
	}
	what := fmt.Sprintf("%s jobs", res.State)
	if !filter.IsZero() {
		what += " matching " + filter.String()
	}
	excluded := ""
	if res.Excluded > 0 {
		var why []string
		if n := res.Excluded - res.ExcludedByChild; n > 0 {
			why = append(why, fmt.Sprintf("%d failed as unrecoverable", n))
		}
		if res.ExcludedByChild > 0 {
			why = append(why, fmt.Sprintf("%d flow parents failed by a child", res.ExcludedByChild))
		}
		excluded = fmt.Sprintf("; %s left alone (--include-unrecoverable retries them)", strings.Join(why, " and "))
	}
	if res.DryRun {
		fmt.Fprintf(c.out, "dry run: would retry %d %s in %s%s%s\n", res.Matched, what, queue, freshNote(*reset), excluded)
		for i, id := range res.IDs {
			if i == 20 {
				fmt.Fprintf(c.out, "  ... and %d more\n", res.Matched-20)
				break
			}
			fmt.Fprintf(c.out, "  %s\n", id)
		}
		return nil
	}
	fmt.Fprintf(c.out, "retried %d of %d %s in %s%s in %s", res.Retried, res.Matched, what, queue, freshNote(*reset), time.Since(start).Round(time.Millisecond))
	if res.Skipped > 0 {
		fmt.Fprintf(c.out, " (%d skipped: they changed meanwhile, or a worker held them)", res.Skipped)
	}
	fmt.Fprint(c.out, excluded)
	fmt.Fprintln(c.out)
	for _, k := range res.Skips {
		fmt.Fprintf(c.out, "  skipped %s: %s\n", k.ID, k.Reason)
	}
	return nil
}

func freshNote(reset bool) string {
	if reset {
		return " with fresh attempts"
	}
	return ""
}
