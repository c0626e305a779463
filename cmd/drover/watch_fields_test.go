package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestWatchJSONKeepsCleanedAndDeduplicated: `drover watch --json` carries
// a cleaned event's count and a deduplicated event's ids (BullMQ's field
// names), as the human lines do. The JSON said only {"name":"cleaned"}
// and {"name":"deduplicated","jobId":...}: how many jobs went, and which
// add was dropped for which id, were lost to scripts and to the
// dashboard's live feed, which reads the same JSON.
func TestWatchJSONKeepsCleanedAndDeduplicated(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	first, err := q.Add(ctx, "x", nil, &drover.JobOptions{Deduplication: &drover.Deduplication{ID: "op-1"}})
	require.NoError(t, err)
	_, err = q.Add(ctx, "x", nil, &drover.JobOptions{Deduplication: &drover.Deduplication{ID: "op-1"}})
	require.NoError(t, err)
	for range 2 {
		_, err = q.Add(ctx, "old", nil, nil)
		require.NoError(t, err)
	}
	removed, err := q.Clean(ctx, 0, 0, drover.StateWaiting)
	require.NoError(t, err)
	require.Len(t, removed, 3)

	var out, errOut testkit.SyncBuffer // a warning on stderr is no event
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel()
	require.NoError(t, (&Main{Stdout: &out, Stderr: &errOut}).Run(wctx, []string{"watch", "mail", "--from", "0", "--json",
		"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix}))
	var cleaned, dedup map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		switch ev["name"] {
		case string(drover.EventCleaned):
			cleaned = ev
		case string(drover.EventDeduplicated):
			dedup = ev
		}
	}
	require.NotNil(t, cleaned, out.String())
	require.Equal(t, float64(3), cleaned["count"], "cleaned: %v", cleaned)
	require.NotNil(t, dedup, out.String())
	require.Equal(t, first.Job.ID, dedup["jobId"])
	require.Equal(t, "op-1", dedup["deduplicationId"], "deduplicated: %v", dedup)
	require.NotEmpty(t, dedup["deduplicatedJobId"], "deduplicated: %v", dedup)
}
