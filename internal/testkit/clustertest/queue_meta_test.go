//go:build cluster

package clustertest_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestClusterQueueMeta: RemoveOrphanedJobs scans the master of the queue's
// slot (all of a queue's keys are there), and GetMeta, IsMaxed and
// ExportPrometheusMetrics read that one slot, with the hash tag in the
// prefix and in the queue name.
func TestClusterQueueMeta(t *testing.T) {
	t.Parallel()
	_, rdb := clusterClient(t)
	for _, tagged := range []bool{true, false} {
		prefix := testPrefix(t, rdb, tagged)
		name := "mq"
		if !tagged {
			name = "{mq}"
		}
		q := newQueue(t, rdb, prefix, name)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		for range 3 {
			_, err := q.Add(ctx, "j", nil, nil)
			require.NoError(t, err)
		}
		base := prefix + ":" + name + ":"
		require.NoError(t, rdb.HSet(ctx, base+"lost1", "name", "j").Err())
		require.NoError(t, rdb.RPush(ctx, base+"lost2:logs", "line").Err())
		n, err := q.RemoveOrphanedJobs(ctx, 10, 0)
		require.NoError(t, err)
		require.Equal(t, 2, n)
		require.Zero(t, rdb.Exists(ctx, base+"lost1", base+"lost2:logs").Val())

		require.NoError(t, q.SetGlobalConcurrency(ctx, 1))
		meta, err := q.GetMeta(ctx)
		require.NoError(t, err)
		require.True(t, meta.ConcurrencySet)
		maxed, err := q.IsMaxed(ctx)
		require.NoError(t, err)
		require.False(t, maxed)
		text, err := q.ExportPrometheusMetrics(ctx, nil)
		require.NoError(t, err)
		require.True(t, strings.Contains(text, `state="waiting"} 3`), text)
	}
}

// TestClusterOnceCalls: the admin calls that carry a call token
// (include/once.lua: the record key is built from the queue's key base, so
// it shares the queue's slot) run on a cluster, with the hash tag in the
// prefix and in the queue name: RemoveRateLimitKey, ChangePriority, Pause
// and Resume.
func TestClusterOnceCalls(t *testing.T) {
	t.Parallel()
	_, rdb := clusterClient(t)
	for _, tagged := range []bool{true, false} {
		prefix := testPrefix(t, rdb, tagged)
		name := "oq"
		if !tagged {
			name = "{oq}"
		}
		q := newQueue(t, rdb, prefix, name)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		require.NoError(t, q.RateLimit(ctx, time.Hour))
		removed, err := q.RemoveRateLimitKey(ctx)
		require.NoError(t, err)
		require.True(t, removed)
		removed, err = q.RemoveRateLimitKey(ctx)
		require.NoError(t, err)
		require.False(t, removed)

		added, err := q.Add(ctx, "j", nil, nil)
		require.NoError(t, err)
		require.NoError(t, q.Job(added.Job.ID).ChangePriority(ctx, 3, false))
		require.NoError(t, q.Pause(ctx))
		paused, err := q.IsPaused(ctx)
		require.NoError(t, err)
		require.True(t, paused)
		require.NoError(t, q.Resume(ctx))
	}
}
