package drover_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestTelemetryOptionStoredAsBullMQ adds a job carrying a trace context and
// reads it back: the stored opts hold BullMQ's tm/omc keys and Job.Opts
// returns the same Telemetry.
func TestTelemetryOptionStoredAsBullMQ(t *testing.T) {
	t.Parallel()
	b := setupQueue(t)
	ctx := context.Background()
	tel := &drover.Telemetry{Metadata: `{"traceparent":"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}`}
	res, err := b.queue.Add(ctx, "traced", map[string]any{}, &drover.JobOptions{Telemetry: tel})
	require.NoError(t, err)
	raw, err := b.rdb.HGet(ctx, b.prefix+":q:"+res.Job.ID, "opts").Result()
	require.NoError(t, err)
	require.JSONEq(t, `{"tm":`+jsonQuote(t, tel.Metadata)+`,"attempts":0}`, raw)
	job, err := b.queue.GetJob(ctx, res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, tel, job.Opts.Telemetry)
}

func jsonQuote(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	return string(b)
}
