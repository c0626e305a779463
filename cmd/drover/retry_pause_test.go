package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestRetryRefusesANegativePause: `drover retry q --pause -5s` is a usage
// error naming --pause, and the failed jobs stay failed. It retried them
// with no pause at all (inspect reads a negative pause as none), the storm
// the pause is there to prevent, as --grace, --since and --block refuse a
// negative duration.
func TestRetryRefusesANegativePause(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	id, err := o.Add(ctx, prefix, "q", "fails", nil, map[string]any{"attempts": 1})
	require.NoError(t, err)
	require.NoError(t, o.StartWorker(ctx, prefix, "q", bullmqoracle.WorkerOptions{ID: "w", Behavior: bullmqoracle.Fail("down")}))
	_, err = o.WaitUntilFinished(ctx, prefix, "q", id, 20*time.Second)
	require.NoError(t, err)
	require.NoError(t, o.StopWorker(ctx, "w", false))

	var out bytes.Buffer
	err = (&Main{Stdout: &out, Stderr: &out}).Run(ctx, []string{"retry", "q", "--pause", "-5s",
		"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix})
	var usage *usageError
	require.ErrorAs(t, err, &usage, out.String())
	require.ErrorContains(t, err, "--pause")
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	st, err := q.GetJobState(ctx, id)
	require.NoError(t, err)
	require.Equal(t, drover.StateFailed, st, "nothing retried")
}
