//go:build cluster

package clustertest_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
)

// TestClusterMasterKilledEveryCall: the master of a queue's slot crashes and
// its replica is elected. Each call below runs on a client of its own that
// learned the old topology before the crash (no worker, no other call on
// it to trip a slot-map reload first), so every call is the first after the
// election on a stale map, and must reach the new master well before
// go-redis's periodic slot reload (60 s): on its first try. Before
// internal/topology (a reload hook on every command), GetJobCounts had not
// answered 20 s after the election; before its dial hook, the first call
// of each client failed (connection refused).
func TestClusterMasterKilledEveryCall(t *testing.T) {
	ctx := context.Background()
	c, rdb := clusterClient(t)
	prefix := testPrefix(t, rdb, false)
	names, masters := spreadQueues(t, c, rdb, prefix, 1)
	name := names[0]
	seed := newQueue(t, rdb, prefix, name)
	res, err := seed.Add(ctx, "x", map[string]int{"n": 1}, &drover.JobOptions{JobID: "known"})
	require.NoError(t, err)
	_, err = seed.Add(ctx, "later", nil, &drover.JobOptions{JobID: "later", Delay: time.Hour})
	require.NoError(t, err)
	require.NoError(t, c.WaitReplicated(ctx))

	type handles struct {
		q   *drover.Queue
		ins *inspect.Inspector
	}
	calls := []struct {
		name string
		call func(ctx context.Context, h handles) error
	}{
		{"Add", func(ctx context.Context, h handles) error { _, err := h.q.Add(ctx, "y", nil, nil); return err }},
		{"AddBulk", func(ctx context.Context, h handles) error {
			_, err := h.q.AddBulk(ctx, make([]drover.BulkJob, 3))
			return err
		}},
		{"GetJobCounts", func(ctx context.Context, h handles) error { _, err := h.q.GetJobCounts(ctx); return err }},
		{"GetJob", func(ctx context.Context, h handles) error { _, err := h.q.GetJob(ctx, res.Job.ID); return err }},
		{"GetJobState", func(ctx context.Context, h handles) error { _, err := h.q.GetJobState(ctx, res.Job.ID); return err }},
		{"GetJobs", func(ctx context.Context, h handles) error {
			_, err := h.q.GetJobs(ctx, []drover.JobState{drover.StateWaiting}, 0, 10, true)
			return err
		}},
		{"GetJobLogs", func(ctx context.Context, h handles) error {
			_, _, err := h.q.GetJobLogs(ctx, res.Job.ID, 0, -1)
			return err
		}},
		{"IsPaused", func(ctx context.Context, h handles) error { _, err := h.q.IsPaused(ctx); return err }},
		{"Pause", func(ctx context.Context, h handles) error { return h.q.Pause(ctx) }},
		{"Resume", func(ctx context.Context, h handles) error { return h.q.Resume(ctx) }},
		{"Clean", func(ctx context.Context, h handles) error {
			_, err := h.q.Clean(ctx, time.Hour, 10, drover.StateCompleted)
			return err
		}},
		{"GetJobSchedulersCount", func(ctx context.Context, h handles) error {
			_, err := h.q.GetJobSchedulersCount(ctx)
			return err
		}},
		{"inspect.Queues", func(ctx context.Context, h handles) error { _, err := h.ins.Queues(ctx); return err }},
		{"inspect.Overview", func(ctx context.Context, h handles) error { _, err := h.ins.Overview(ctx); return err }},
		{"inspect.QueueInfo", func(ctx context.Context, h handles) error { _, err := h.ins.QueueInfo(ctx, name); return err }},
		{"inspect.Jobs", func(ctx context.Context, h handles) error {
			_, err := h.ins.Jobs(ctx, name, &inspect.ListOptions{State: drover.StateWaiting})
			return err
		}},
		{"inspect.Job", func(ctx context.Context, h handles) error { _, err := h.ins.Job(ctx, name, res.Job.ID); return err }},
		{"inspect.DelayedStats", func(ctx context.Context, h handles) error { _, err := h.ins.DelayedStats(ctx, name); return err }},
		{"inspect.Pause", func(ctx context.Context, h handles) error { return h.ins.Pause(ctx, name) }},
		{"inspect.Resume", func(ctx context.Context, h handles) error { return h.ins.Resume(ctx, name) }},
		{"inspect.PromoteJob", func(ctx context.Context, h handles) error { return h.ins.PromoteJob(ctx, name, "later") }},
	}
	// One client per call, each with the slot map of the old topology.
	hs := make([]handles, len(calls))
	for n := range calls {
		cl := c.NewClient(&redis.ClusterOptions{})
		t.Cleanup(func() { _ = cl.Close() })
		q := newQueue(t, cl, prefix, name)
		ins, err := inspect.New(cl, &inspect.Options{Prefix: prefix, DiscoveryInterval: -1})
		require.NoError(t, err)
		t.Cleanup(func() { _ = ins.Close(context.Background()) })
		_, err = q.GetJobCounts(ctx) // loads the slot map: the old master
		require.NoError(t, err)
		hs[n] = handles{q: q, ins: ins}
	}

	newMaster, killed, err := c.KillMaster(ctx, masters[0])
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Restart(context.Background(), killed)) })
	elected := time.Now()
	t.Logf("killed %s; %s elected", masters[0], newMaster)

	// Every call answers on its first try: go-redis tries a command up to
	// 4 times, and the first refused dial to the dead address reloads the
	// slot map, so a later try of the same call reaches the new master.
	// Before the dial hook nothing reloaded the map within a call: all 4
	// tries went to the dead address (5 refused dials each, 100 ms apart)
	// and the call failed; a caller whose deadline was shorter than that
	// hit it on every try and recovered only when a dial error happened to
	// come back within its deadline (3.5-7.7 s, 5-9 tries with 1 s tries).
	for n, tc := range calls {
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		start := time.Now()
		err := tc.call(cctx, hs[n])
		cancel()
		require.NoError(t, err, "%s: the first call after the election", tc.name)
		t.Logf("%s answers in %s (%s after the election)", tc.name,
			time.Since(start).Round(time.Millisecond), time.Since(elected).Round(time.Millisecond))
	}
}
