package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestWatchJSONCarriesEventFields: `drover watch --json` (and the
// dashboard's event feed, which writes the same inspect.Event) gives each
// event's own fields: a progress event's value, a cleaned event's count,
// a deduplicated event's ids. They were dropped: a progress line carried
// its job id and nothing of the progress.
func TestWatchJSONCarriesEventFields(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)

	res, err := q.Add(ctx, "p", nil, &drover.JobOptions{Deduplication: &drover.Deduplication{ID: "d1"}})
	require.NoError(t, err)
	_, err = q.Add(ctx, "p", nil, &drover.JobOptions{JobID: "dup", Deduplication: &drover.Deduplication{ID: "d1"}})
	require.NoError(t, err)
	job, err := q.GetJob(ctx, res.Job.ID)
	require.NoError(t, err)
	require.NoError(t, job.UpdateProgress(ctx, map[string]any{"pct": 50}))
	_, err = q.Add(ctx, "other", nil, nil)
	require.NoError(t, err)
	cleaned, err := q.Clean(ctx, 0, 10, drover.StateWaiting)
	require.NoError(t, err)
	require.Len(t, cleaned, 2)
	_, err = q.Clean(ctx, 0, 10, drover.StateWaiting)
	require.NoError(t, err)

	var out testkit.SyncBuffer
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- (&Main{Stdout: &out, Stderr: &out}).Run(wctx, []string{"watch", "mail", "--json", "--from", "0",
			"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix})
	}()
	waitUntil(t, func() bool { return strings.Count(out.String(), `"cleaned"`) == 2 })
	cancel()
	require.NoError(t, <-done)

	// Read as JSON objects: the names are the API (openapi.json's Event).
	byName := map[string][]map[string]any{}
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		name, _ := ev["name"].(string)
		byName[name] = append(byName[name], ev)
	}
	require.Len(t, byName["progress"], 1)
	require.Equal(t, map[string]any{"pct": float64(50)}, byName["progress"][0]["data"], "the progress value")
	require.Len(t, byName["deduplicated"], 1)
	d := byName["deduplicated"][0]
	require.Equal(t, res.Job.ID, d["jobId"], "the job that kept the id")
	require.Equal(t, "d1", d["deduplicationId"])
	require.Equal(t, "dup", d["deduplicatedJobId"])
	require.Len(t, byName["cleaned"], 2)
	require.Equal(t, float64(2), byName["cleaned"][0]["count"])
	require.Equal(t, float64(0), byName["cleaned"][1]["count"], "a clean of nothing says 0")

	// The typed form reads the same.
	var ev inspect.Event
	require.NoError(t, json.Unmarshal([]byte(strings.Split(strings.TrimSpace(out.String()), "\n")[0]), &ev))
	require.Equal(t, drover.EventAdded, ev.Name)
}
