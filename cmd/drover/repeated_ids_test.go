package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestRepeatedIDsActOnce: `drover promote q a a` and `drover retry q f f`
// act on each job once and succeed. The second copy of an id was tried
// again, refused (the job had just left delayed or failed) and made the
// command fail: "1 of 2 jobs not promoted", exit 1, though every job named
// was promoted.
func TestRepeatedIDsActOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	later, err := q.Add(ctx, "later", nil, &drover.JobOptions{JobID: "a", Delay: time.Hour})
	require.NoError(t, err)
	failing, err := q.Add(ctx, "fails", nil, &drover.JobOptions{JobID: "f", Attempts: 1})
	require.NoError(t, err)
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
		return nil, errors.New("down")
	}), &drover.WorkerOptions{Prefix: prefix})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	waitUntil(t, func() bool {
		st, err := q.GetJobState(ctx, failing.Job.ID)
		require.NoError(t, err)
		return st == drover.StateFailed
	})
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	require.NoError(t, w.Close(cctx))
	cancel()

	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, append(args, "--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix))
		return out.String(), err
	}
	out, err := run("promote", "q", "a", "a")
	require.NoError(t, err, out)
	require.Equal(t, 1, strings.Count(out, "job a: promoted"), out)
	require.Contains(t, out, "promoted 1 delayed jobs in q", out)
	out, err = run("retry", "q", "f", "f")
	require.NoError(t, err, out)
	require.Equal(t, "job f: retried from failed\n", out)
	for _, id := range []string{later.Job.ID, failing.Job.ID} {
		st, err := q.GetJobState(ctx, id)
		require.NoError(t, err)
		require.Equal(t, drover.StateWaiting, st, id)
	}
}
