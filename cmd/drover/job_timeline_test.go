package main

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestJobTimelineWords: `drover job` says why a job ran again or did not
// run: a job that failed for good and ran again was retried by hand; a job
// cancelled while queued failed without running.
func TestJobTimelineWords(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	var runs atomic.Int32
	w, err := drover.NewWorker(rdb, "mail", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		if runs.Add(1) == 1 {
			return nil, drover.Unrecoverable(errors.New("mailbox full"))
		}
		return "sent", nil
	}), &drover.WorkerOptions{Prefix: prefix, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })
	state := func(id string) drover.JobState {
		s, err := q.GetJobState(ctx, id)
		require.NoError(t, err)
		return s
	}

	res, err := q.Add(ctx, "send", nil, &drover.JobOptions{Attempts: 3})
	require.NoError(t, err)
	id := res.Job.ID
	waitUntil(t, func() bool { return state(id) == drover.StateFailed })
	job, err := q.GetJob(ctx, id)
	require.NoError(t, err)
	require.NoError(t, job.Retry(ctx, drover.StateFailed, nil))
	waitUntil(t, func() bool { return state(id) == drover.StateCompleted })

	run := func(args ...string) string {
		out, err := runCLI(ctx, t, prefix, args...)
		require.NoError(t, err, out)
		return out
	}
	out := run("job", "mail", id)
	require.Regexp(t, `(?s)#1\s+failed: unrecoverable.*mailbox full\n\s+└ retried by hand\n\s+#2\s+completed`, out)

	// A retry with fresh attempts: the earlier run stays, a "--" line marks
	// the reset, and the new run is numbered from #1 again.
	run("retry", "mail", id, "--state", "completed", "--reset-attempts")
	waitUntil(t, func() bool { return state(id) == drover.StateCompleted && runs.Load() == 3 })
	out = run("job", "mail", id)
	require.Regexp(t, `(?s)#1\s+failed: unrecoverable.*\n\s+#2\s+completed[^\n]*\n\s+--\s+retried with fresh attempts \S+ \(no attempt ran\) after 2 started, 2 spent; numbered from #1 again\n\s+#1\s+completed`, out)

	require.NoError(t, w.Close(ctx))
	res, err = q.Add(ctx, "send", nil, &drover.JobOptions{Delay: time.Hour})
	require.NoError(t, err)
	require.NoError(t, q.CancelJob(ctx, res.Job.ID, "not needed", nil))
	out = run("job", "mail", res.Job.ID)
	require.Regexp(t, `(?m)^\s+--\s+failed without running \S+ \(no attempt ran\)\s+cancelled: not needed$`, out)
	require.NotContains(t, out, "no attempt yet")
}

// TestJobWithoutQueue: `drover job <id>` finds the job's queue; with the id
// in two queues it lists them and exits 2, and an id no queue holds is not
// found.
func TestJobWithoutQueue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	for _, name := range []string{"mail", "sms"} {
		q, err := drover.NewQueue(rdb, name, &drover.QueueOptions{Prefix: prefix})
		require.NoError(t, err)
		_, err = q.Add(ctx, "send", nil, &drover.JobOptions{JobID: "both"})
		require.NoError(t, err)
		if name == "sms" {
			_, err = q.Add(ctx, "send", nil, &drover.JobOptions{JobID: "only-sms"})
			require.NoError(t, err)
		}
	}
	out, err := runCLI(ctx, t, prefix, "job", "only-sms")
	require.NoError(t, err, out)
	require.Contains(t, out, `job only-sms "send" in queue sms`)

	// Several queues hold the id: they are listed and, as no job was
	// shown, the queue is a missing argument (exit 2). It exited 0, so a
	// script reading `drover job <id> --json` went on with the list.
	out, err = runCLI(ctx, t, prefix, "job", "both")
	require.EqualError(t, err, `2 queues hold a job "both"; name one: drover job <queue> both`)
	require.Equal(t, 2, exitCode(err))
	require.Regexp(t, `(?m)^mail\s+send\s+waiting$`, out)
	require.Regexp(t, `(?m)^sms\s+send\s+waiting$`, out)
	out, err = runCLI(ctx, t, prefix, "job", "both", "--json")
	require.Equal(t, 2, exitCode(err), out)
	require.JSONEq(t, `[{"queue":"mail","id":"both","name":"send","state":"waiting"},{"queue":"sms","id":"both","name":"send","state":"waiting"}]`, out)

	_, err = runCLI(ctx, t, prefix, "job", "nosuch")
	require.ErrorIs(t, err, drover.ErrJobNotFound)
}
