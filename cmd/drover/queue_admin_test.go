package main

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestRemoveJobsByID: `drover remove <queue> <id>...` on jobs Node BullMQ
// made. Each id is tried and its outcome said: a waiting job goes, a flow
// parent goes with its child in another queue (BullMQ's job.remove()), a
// job a worker holds is refused and stays active, a missing id is named;
// the exit status says how many were not removed.
func TestRemoveJobsByID(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	_, err := o.Add(ctx, prefix, "q", "send", nil, map[string]any{"jobId": "run"})
	require.NoError(t, err)
	got, err := o.ManualNext(ctx, prefix, "q", "tok", nil)
	require.NoError(t, err)
	require.Equal(t, "run", got)
	_, err = o.Add(ctx, prefix, "q", "send", nil, map[string]any{"jobId": "a"})
	require.NoError(t, err)
	_, err = o.AddFlow(ctx, prefix, bullmqoracle.FlowJob{Name: "p", QueueName: "q", Opts: map[string]any{"jobId": "parent"},
		Children: []bullmqoracle.FlowJob{{Name: "c", QueueName: "kids", Opts: map[string]any{"jobId": "kid"}}}})
	require.NoError(t, err)

	out, err := runCLI(ctx, t, prefix, "remove", "q", "a", "run", "nosuch", "parent", "a")
	require.EqualError(t, err, "2 of 4 jobs not removed", out)
	require.Contains(t, out, "job a: removed\n")
	require.Contains(t, out, "job run: not removed: ")
	require.Contains(t, out, "job nosuch: not removed: ")
	require.Contains(t, out, "job parent: removed\n")
	require.Contains(t, out, "removed 2 of 4 jobs from q\n")

	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	st, err := q.GetJobState(ctx, "run")
	require.NoError(t, err)
	require.Equal(t, drover.StateActive, st, "a held job stays")
	for queue, id := range map[string]string{"q": "a", "kids": "kid"} {
		st, err := o.GetState(ctx, prefix, queue, id)
		require.NoError(t, err)
		require.Equal(t, "unknown", st, "%s/%s", queue, id)
	}

	// --json: each id's outcome.
	out, err = runCLI(ctx, t, prefix, "remove", "q", "run", "--json")
	require.Error(t, err)
	var res struct {
		Removed int `json:"removed"`
		Jobs    []struct{ ID, Error string }
	}
	require.NoError(t, json.Unmarshal([]byte(out), &res), out)
	require.Equal(t, 0, res.Removed)
	require.Len(t, res.Jobs, 1)
	require.Contains(t, res.Jobs[0].Error, "locked")

	type row struct {
		Action, JobID, Outcome string
		Jobs                   int
	}
	var rows []row
	for _, e := range readAudit(t, rdb, prefix).Entries {
		rows = append(rows, row{e.Action, e.JobID, e.Outcome, e.Jobs})
	}
	require.Equal(t, []row{{"remove-job", "run", "error", 0}, {"remove-job", "parent", "ok", 1}, {"remove-job", "nosuch", "error", 0},
		{"remove-job", "run", "error", 0}, {"remove-job", "a", "ok", 1}}, rows, "newest first, each id once")

	_, err = runCLI(ctx, t, prefix, "remove", "q")
	var usage *usageError
	require.ErrorAs(t, err, &usage)
	_, err = runCLI(ctx, t, prefix, "remove", "nosuchqueue", "a")
	require.ErrorContains(t, err, "nosuchqueue")
}

// TestDrainCountsAsksAndKeepsTheRest: `drover drain` on a queue Node
// BullMQ filled. A dry run counts; without a terminal it refuses without
// --yes and deletes nothing; with --yes it deletes the waiting and
// prioritized jobs, and the delayed ones only with --delayed; active and
// completed jobs stay. Asked on a terminal, "n" keeps everything.
func TestDrainCountsAsksAndKeepsTheRest(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	add := func(id string, opts map[string]any) {
		opts["jobId"] = id
		_, err := o.Add(ctx, prefix, "q", "send", nil, opts)
		require.NoError(t, err)
	}
	add("run", map[string]any{})
	_, err := o.ManualNext(ctx, prefix, "q", "tok", nil)
	require.NoError(t, err)
	add("w1", map[string]any{})
	add("w2", map[string]any{})
	add("p1", map[string]any{"priority": 3})
	add("d1", map[string]any{"delay": 3_600_000})
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	counts := func() map[drover.JobState]int64 {
		c, err := q.GetJobCounts(ctx, drover.StateWaiting, drover.StatePrioritized, drover.StateDelayed, drover.StateActive)
		require.NoError(t, err)
		return c
	}
	before := counts()

	out, err := runCLI(ctx, t, prefix, "drain", "q", "--dry-run")
	require.NoError(t, err)
	require.Equal(t, "dry run: would delete up to 3 waiting, paused and prioritized jobs from q\n", out)
	out, err = runCLI(ctx, t, prefix, "drain", "q", "--delayed", "--dry-run", "--json")
	require.NoError(t, err)
	require.JSONEq(t, `{"queue":"q","delayed":true,"dryRun":true,"wouldRemove":4}`, out)
	_, err = runCLI(ctx, t, prefix, "drain", "q")
	require.ErrorContains(t, err, "drain would delete up to 3 waiting, paused and prioritized jobs from q: pass --yes")
	var out2 bytes.Buffer
	m := Main{Stdout: &out2, Stderr: &out2, Interactive: true, Stdin: strings.NewReader("n\n")}
	require.NoError(t, m.Run(ctx, []string{"drain", "q", "--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix}))
	require.Contains(t, out2.String(), "not drained")
	require.Equal(t, before, counts(), "nothing deleted before a yes")

	out, err = runCLI(ctx, t, prefix, "drain", "q", "--yes")
	require.NoError(t, err)
	require.Equal(t, "drained q: deleted 3 jobs\n", out)
	require.Equal(t, map[drover.JobState]int64{drover.StateWaiting: 0, drover.StatePrioritized: 0, drover.StateDelayed: 1, drover.StateActive: 1}, counts())
	out, err = runCLI(ctx, t, prefix, "drain", "q", "--delayed", "--yes", "--json")
	require.NoError(t, err)
	require.JSONEq(t, `{"queue":"q","delayed":true,"removed":1}`, out)
	require.Equal(t, map[drover.JobState]int64{drover.StateWaiting: 0, drover.StatePrioritized: 0, drover.StateDelayed: 0, drover.StateActive: 1}, counts())
	out, err = runCLI(ctx, t, prefix, "drain", "q")
	require.NoError(t, err, "nothing left to ask about")
	require.Equal(t, "nothing to drain: no waiting, paused and prioritized jobs in q\n", out)
	st, err := o.GetState(ctx, prefix, "q", "run")
	require.NoError(t, err)
	require.Equal(t, "active", st)
	entries := readAudit(t, rdb, prefix).Entries
	require.Len(t, entries, 2, "dry runs, refusals and a no are not audited")
	require.Equal(t, "drain", entries[1].Action)
	require.Equal(t, 3, entries[1].Jobs)
	require.Equal(t, "delayed=false", entries[1].Detail)
	require.Equal(t, []string{"w2", "w1", "p1"}, entries[1].JobIDs, "the entry names the jobs drained (wait's order, then prioritized)")
	require.Equal(t, 1, entries[0].Jobs)
	require.Equal(t, "delayed=true", entries[0].Detail)
	require.Equal(t, []string{"d1"}, entries[0].JobIDs)
}

// TestObliterateRefusesWhileJobsRunAndAsks: `drover obliterate` refuses a
// queue with an active job before it asks, changing nothing (the queue is
// not left paused); without a terminal it needs --yes; with --force --yes
// the queue and all its keys are gone.
func TestObliterateRefusesWhileJobsRunAndAsks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	o := bullmqoracle.Start(t, redistest.Shared(t).Addr)
	for _, id := range []string{"run", "w1", "w2"} {
		_, err := o.Add(ctx, prefix, "q", "send", nil, map[string]any{"jobId": id})
		require.NoError(t, err)
	}
	_, err := o.ManualNext(ctx, prefix, "q", "tok", nil)
	require.NoError(t, err)
	keys := func() []string {
		k, err := rdb.Keys(ctx, prefix+":q:*").Result()
		require.NoError(t, err)
		return k
	}
	before := keys()

	_, err = runCLI(ctx, t, prefix, "obliterate", "q", "--yes")
	require.ErrorIs(t, err, drover.ErrActiveJobs)
	require.ErrorContains(t, err, `queue "q" has 1 active jobs: obliterate refused, nothing changed`)
	require.ElementsMatch(t, before, keys())
	paused, err := rdb.HExists(ctx, prefix+":q:meta", "paused").Result()
	require.NoError(t, err)
	require.False(t, paused)

	out, err := runCLI(ctx, t, prefix, "obliterate", "q", "--force", "--dry-run")
	require.NoError(t, err)
	require.Equal(t, "dry run: would delete queue q and its 3 jobs\n", out)
	_, err = runCLI(ctx, t, prefix, "obliterate", "q", "--force")
	require.ErrorContains(t, err, "pass --yes to confirm")
	require.ElementsMatch(t, before, keys())

	out, err = runCLI(ctx, t, prefix, "obliterate", "q", "--force", "--yes")
	require.NoError(t, err)
	require.Equal(t, "obliterated q: deleted 3 jobs\n", out)
	require.Empty(t, keys())
	entries := readAudit(t, rdb, prefix).Entries
	require.Len(t, entries, 1)
	require.Equal(t, "obliterate", entries[0].Action)
	require.Equal(t, 3, entries[0].Jobs)
	require.Equal(t, "force=true", entries[0].Detail)
	_, err = runCLI(ctx, t, prefix, "obliterate", "q", "--yes")
	require.ErrorContains(t, err, "q")
}

// TestObliterateNamesTheSchedulersItDeletes: obliterate deletes a queue's
// job schedulers with its jobs (every key goes), but its count, question
// and answer said only "its N jobs", so cron schedules vanished
// unannounced. They are counted and named now.
func TestObliterateNamesTheSchedulersItDeletes(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	for _, id := range []string{"nightly", "hourly"} {
		out, err := runCLI(ctx, t, prefix, "scheduler", "upsert", "q", id, "--every", "1h")
		require.NoError(t, err, out)
	}
	out, err := runCLI(ctx, t, prefix, "obliterate", "q", "--dry-run")
	require.NoError(t, err, out)
	require.Equal(t, "dry run: would delete queue q and its 2 jobs and its 2 job schedulers\n", out)
	_, err = runCLI(ctx, t, prefix, "obliterate", "q")
	require.ErrorContains(t, err, "obliterate would delete queue q and its 2 jobs and its 2 job schedulers: pass --yes")
	out, err = runCLI(ctx, t, prefix, "obliterate", "q", "--yes")
	require.NoError(t, err, out)
	require.Equal(t, "obliterated q: deleted 2 jobs and its 2 job schedulers\n", out)
	n, err := rdb.Exists(ctx, prefix+":q:repeat").Result()
	require.NoError(t, err)
	require.Zero(t, n)
}
