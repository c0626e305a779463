//go:build cluster

package clustertest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit"
)

// TestClusterMasterKilledEveryCall: the master of a queue's slot crashes and
// its replica is elected. A client that knew the old topology, used only
// for reads and admin calls (no worker, no add in flight to trip a reload),
// must reach the new master for every call well before go-redis's periodic
// slot reload (60 s). Before internal/topology (a reload hook on every
// command), GetJobCounts had not answered 20 s after the election.
func TestClusterMasterKilledEveryCall(t *testing.T) {
	ctx := context.Background()
	c, rdb := clusterClient(t)
	prefix := testPrefix(t, rdb, false)
	names, masters := spreadQueues(t, c, rdb, prefix, 1)
	q := newQueue(t, rdb, prefix, names[0])
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ins.Close(context.Background()) })
	res, err := q.Add(ctx, "x", map[string]int{"n": 1}, &drover.JobOptions{JobID: "known"})
	require.NoError(t, err)
	require.NoError(t, c.WaitReplicated(ctx))
	_, err = q.GetJobCounts(ctx) // the client's slot map names the old master
	require.NoError(t, err)

	newMaster, killed, err := c.KillMaster(ctx, masters[0])
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Restart(context.Background(), killed)) })
	elected := time.Now()
	t.Logf("killed %s; %s elected", masters[0], newMaster)

	calls := []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"GetJobCounts", func(ctx context.Context) error { _, err := q.GetJobCounts(ctx); return err }},
		{"GetJob", func(ctx context.Context) error { _, err := q.GetJob(ctx, res.Job.ID); return err }},
		{"GetJobState", func(ctx context.Context) error { _, err := q.GetJobState(ctx, res.Job.ID); return err }},
		{"GetJobs", func(ctx context.Context) error {
			_, err := q.GetJobs(ctx, []drover.JobState{drover.StateWaiting}, 0, 10, true)
			return err
		}},
		{"GetJobLogs", func(ctx context.Context) error { _, _, err := q.GetJobLogs(ctx, res.Job.ID, 0, -1); return err }},
		{"IsPaused", func(ctx context.Context) error { _, err := q.IsPaused(ctx); return err }},
		{"Pause", func(ctx context.Context) error { return q.Pause(ctx) }},
		{"Resume", func(ctx context.Context) error { return q.Resume(ctx) }},
		{"inspect.Job", func(ctx context.Context) error { _, err := ins.Job(ctx, names[0], res.Job.ID); return err }},
		{"inspect.Pause", func(ctx context.Context) error { return ins.Pause(ctx, names[0]) }},
		{"inspect.Resume", func(ctx context.Context) error { return ins.Resume(ctx, names[0]) }},
	}
	for _, tc := range calls {
		testkit.WaitFor(t, 20*time.Second, tc.name+" to answer from the new master", func() bool {
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			return tc.call(cctx) == nil
		})
		t.Logf("%s answers %s after the election", tc.name, time.Since(elected).Round(time.Millisecond))
	}
}
