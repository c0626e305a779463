package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestJobShowsProgressAndReturnValue: `drover job` shows the progress a
// Node BullMQ worker reported (an object) and what it returned, as the
// dashboard's job page does. It showed neither: an operator asking how far
// a long job got, or what a job returned, had to read the JSON.
func TestJobShowsProgressAndReturnValue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, prefix := redistest.Client(t)
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	id, err := o.Add(ctx, prefix, "q", "import", nil, nil)
	require.NoError(t, err)
	done := bullmqoracle.Return(map[string]any{"rows": 1200})
	require.NoError(t, o.StartWorker(ctx, prefix, "q", bullmqoracle.WorkerOptions{ID: "w",
		Behavior: bullmqoracle.Progress(map[string]any{"pct": 50, "step": "rows"}, &done)}))
	_, err = o.WaitUntilFinished(ctx, prefix, "q", id, 20*time.Second)
	require.NoError(t, err)
	require.NoError(t, o.StopWorker(ctx, "w", false))

	var out bytes.Buffer
	require.NoError(t, (&Main{Stdout: &out, Stderr: &out}).Run(ctx, []string{"job", "q", id,
		"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix}))
	require.Contains(t, out.String(), "\n  progress     {\"pct\":50,\"step\":\"rows\"}\n", out.String())
	require.Contains(t, out.String(), "\nreturn value: {\"rows\":1200}\n", out.String())
}
