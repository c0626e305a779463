package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestWatchShowsProgress: `drover watch` prints a progress event's value,
// as a line and in --json ("data", BullMQ's field). Both said only
// "progress job 1": the value the worker reported was dropped, so watching
// a long job's progress showed nothing of it.
func TestWatchShowsProgress(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	res, err := q.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	job, err := q.GetJob(ctx, res.Job.ID)
	require.NoError(t, err)
	require.NoError(t, job.UpdateProgress(ctx, map[string]any{"pct": 42, "step": "<copy>"}))
	require.NoError(t, job.UpdateProgress(ctx, 55))

	watch := func(args ...string) string {
		var out, errOut testkit.SyncBuffer // a warning on stderr is no event
		wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		defer cancel()
		err := (&Main{Stdout: &out, Stderr: &errOut}).Run(wctx, append([]string{"watch", "mail", "--from", "0",
			"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix}, args...))
		require.NoError(t, err, out.String())
		return out.String()
	}
	out := watch()
	require.Contains(t, out, ` progress         job `+res.Job.ID+` {"pct":42,"step":"<copy>"}`+"\n", out)
	require.Contains(t, out, ` progress         job `+res.Job.ID+" 55\n", out)

	var progress []string
	for _, line := range strings.Split(strings.TrimSpace(watch("--json")), "\n") {
		var ev inspect.Event
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		if ev.Name == drover.EventProgress {
			progress = append(progress, string(ev.Data))
		}
	}
	require.Len(t, progress, 2)
	require.JSONEq(t, `{"pct":42,"step":"<copy>"}`, progress[0])
	require.JSONEq(t, "55", progress[1])
}
