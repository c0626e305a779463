package main

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestPromoteIDsSaysWhatItDid: `drover promote <queue> <id>...` on delayed
// jobs Node BullMQ added, one of the ids wrong. Every other id is promoted
// and the output says which were and which were not, with a non-zero exit.
// It stopped at the wrong id with its error alone: the jobs promoted before
// it went unmentioned and the ids after it were never tried.
func TestPromoteIDsSaysWhatItDid(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	for _, id := range []string{"a", "c"} {
		_, err := o.Add(ctx, prefix, "q", "later", nil, map[string]any{"jobId": id, "delay": 3_600_000})
		require.NoError(t, err)
	}
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, append(args, "--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix))
		return out.String(), err
	}
	out, err := run("promote", "q", "a", "nosuch", "c")
	require.Error(t, err, out)
	require.Contains(t, out, "job a: promoted\n")
	require.Contains(t, out, `job nosuch: not promoted: promote job "nosuch" in queue "q": job not found`)
	require.Contains(t, out, "job c: promoted\n")
	require.EqualError(t, err, "1 of 3 jobs not promoted")
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	for _, id := range []string{"a", "c"} {
		st, err := q.GetJobState(ctx, id)
		require.NoError(t, err)
		require.Equal(t, drover.StateWaiting, st, id)
	}

	// --json lists each id's outcome too.
	_, err = o.Add(ctx, prefix, "q", "later", nil, map[string]any{"jobId": "d", "delay": 3_600_000})
	require.NoError(t, err)
	out, err = run("promote", "q", "nosuch", "d", "--json")
	require.Error(t, err)
	var res struct {
		Promoted int `json:"promoted"`
		Jobs     []struct {
			ID, Error string
		} `json:"jobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Equal(t, 1, res.Promoted)
	require.Len(t, res.Jobs, 2)
	require.Equal(t, "nosuch", res.Jobs[0].ID)
	require.Contains(t, res.Jobs[0].Error, "job not found")
	require.Equal(t, "d", res.Jobs[1].ID)
	require.Empty(t, res.Jobs[1].Error)
}

// TestPromoteAllPreviewAndLimit: `drover promote <queue>` without ids had
// no preview and no bound: it moved every delayed job at once. --dry-run
// counts them and moves nothing; --limit N promotes the N due first and
// leaves the rest delayed; both are refused with ids.
func TestPromoteAllPreviewAndLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	for i, id := range []string{"a", "b", "c"} {
		_, err := o.Add(ctx, prefix, "q", "later", nil, map[string]any{"jobId": id, "delay": (i + 1) * 3_600_000})
		require.NoError(t, err)
	}
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, append(args, "--redis", "redis://"+redistest.Shared(t).Addr, "--prefix", prefix))
		return out.String(), err
	}
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	states := func() []drover.JobState {
		var out []drover.JobState
		for _, id := range []string{"a", "b", "c"} {
			st, err := q.GetJobState(ctx, id)
			require.NoError(t, err)
			out = append(out, st)
		}
		return out
	}

	out, err := run("promote", "q", "--dry-run")
	require.NoError(t, err, out)
	require.Equal(t, "would promote 3 delayed jobs in q (dry run: nothing moved)\n", out)
	out, err = run("promote", "q", "--dry-run", "--limit", "2", "--json")
	require.NoError(t, err, out)
	require.JSONEq(t, `{"queue":"q","dryRun":true,"wouldPromote":2}`, out)
	require.Equal(t, []drover.JobState{drover.StateDelayed, drover.StateDelayed, drover.StateDelayed}, states())

	out, err = run("promote", "q", "--limit", "2")
	require.NoError(t, err, out)
	require.Equal(t, "promoted 2 delayed jobs in q\n", out)
	require.Equal(t, []drover.JobState{drover.StateWaiting, drover.StateWaiting, drover.StateDelayed}, states(), "the two due first")

	_, err = run("promote", "q", "c", "--dry-run")
	require.ErrorContains(t, err, "promote with job ids takes neither --dry-run nor --limit")
	_, err = run("promote", "q", "--limit", "-1")
	require.ErrorContains(t, err, "--limit must not be negative")
	require.Equal(t, drover.StateDelayed, states()[2])

	// The audit entries name the jobs promoted, as the dashboard's
	// promote-all does; they gave the count alone.
	out, err = run("promote", "q")
	require.NoError(t, err, out)
	require.Equal(t, "promoted 1 delayed jobs in q\n", out)
	entries := readAudit(t, rdb, prefix).Entries
	require.Len(t, entries, 2)
	require.Equal(t, "promote-all", entries[1].Action)
	require.Equal(t, 2, entries[1].Jobs)
	require.Equal(t, []string{"a", "b"}, entries[1].JobIDs)
	require.Equal(t, 1, entries[0].Jobs)
	require.Equal(t, []string{"c"}, entries[0].JobIDs)
}
