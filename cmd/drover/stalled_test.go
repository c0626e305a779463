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

// TestStalledCommand: `drover stalled <queue>` answers "is a worker dead,
// and which jobs did it leave?": two jobs run, one lock is gone (its
// worker died), and a job that stalled before waits again.
func TestStalledCommand(t *testing.T) {
	t.Parallel()

	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "pay", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	for _, id := range []string{"alive", "dead"} {
		_, err := q.Add(ctx, "charge", nil, &drover.JobOptions{JobID: id})
		require.NoError(t, err)
	}
	w, err := drover.NewWorker(rdb, "pay", nil, &drover.WorkerOptions{Prefix: prefix, Name: "w1"})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })
	for range 2 {
		job, err := w.NextJob(ctx, "tok", 0)
		require.NoError(t, err)
		require.NotNil(t, job)
	}
	require.NoError(t, rdb.Del(ctx, prefix+":pay:dead:lock").Err()) // its worker died
	_, err = q.Add(ctx, "charge", nil, &drover.JobOptions{JobID: "again"})
	require.NoError(t, err)
	require.NoError(t, rdb.HSet(ctx, prefix+":pay:again", "stc", 1).Err())

	run := func(args ...string) string {
		out, err := runCLI(ctx, t, prefix, args...)
		require.NoError(t, err, out)
		return out
	}
	out := run("stalled", "pay")
	require.Regexp(t, `(?m)^alive\s+charge\s+1\s+\S+\s+w1\s+held, \S+ left\s+0$`, out)
	require.Regexp(t, `(?m)^dead\s+charge\s+1\s+.*GONE: stalling`, out)
	require.Contains(t, out, "2 active, 1 stalling")
	require.Regexp(t, `(?m)^again\s+charge\s+waiting\s+1\s`, out)
	require.Contains(t, out, "1 jobs stalled at least once")

	var rep inspect.StalledReport
	require.NoError(t, json.Unmarshal([]byte(run("stalled", "pay", "--json")), &rep))
	require.Len(t, rep.Active, 2)
	require.Len(t, rep.Stalled, 1)

	_, err = runCLI(ctx, t, prefix, "stalled")
	require.Error(t, err, "no queue named")
	_, err = runCLI(ctx, t, prefix, "stalled", "nosuch")
	require.Error(t, err)
}

// TestStalledSaysWhenNoWorkerWillRecover: a job whose lock is gone was
// shown as "GONE: stalling, the next stalled check recovers it" with no
// worker connected to the queue, when only a worker runs that check: the
// job stays active until one starts. drover stalled and drover job now
// say so.
func TestStalledSaysWhenNoWorkerWillRecover(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "pay", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	_, err = q.Add(ctx, "charge", nil, &drover.JobOptions{JobID: "dead"})
	require.NoError(t, err)
	w, err := drover.NewWorker(rdb, "pay", nil, &drover.WorkerOptions{Prefix: prefix, Name: "w1"})
	require.NoError(t, err)
	job, err := w.NextJob(ctx, "tok", 0)
	require.NoError(t, err)
	require.NotNil(t, job)
	require.NoError(t, rdb.Del(ctx, prefix+":pay:dead:lock").Err())
	const none = "no worker is connected to pay: the stalling jobs stay active until one starts (its stalled check recovers them)"

	require.NoError(t, w.Close(ctx))
	out, err := runCLI(ctx, t, prefix, "stalled", "pay")
	require.NoError(t, err, out)
	require.Contains(t, out, "1 active, 1 stalling\n"+none+"\n")
	out, err = runCLI(ctx, t, prefix, "job", "pay", "dead")
	require.NoError(t, err, out)
	require.Contains(t, out, "  lock         missing: the job is stalling; no worker is connected to run the stalled check that recovers it\n")

	// A running worker (its first stalled check only marks the job; the
	// next, 30 s on, recovers it): no such line.
	w2, err := drover.NewWorker(rdb, "pay", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return nil, nil }),
		&drover.WorkerOptions{Prefix: prefix, Name: "w2"})
	require.NoError(t, err)
	require.NoError(t, w2.Start(ctx))
	t.Cleanup(func() { require.NoError(t, w2.Close(ctx)) })
	testkit.WaitFor(t, 10*time.Second, "w2 to be connected", func() bool {
		out, err := runCLI(ctx, t, prefix, "workers", "pay")
		require.NoError(t, err, out)
		return strings.Contains(out, "1 workers")
	})
	out, err = runCLI(ctx, t, prefix, "stalled", "pay")
	require.NoError(t, err, out)
	require.Contains(t, out, "1 active, 1 stalling")
	require.NotContains(t, out, none, "w2 is connected")
	out, err = runCLI(ctx, t, prefix, "job", "pay", "dead")
	require.NoError(t, err, out)
	require.Contains(t, out, "  lock         missing: the job is stalling; the next stalled check recovers it\n")
}
