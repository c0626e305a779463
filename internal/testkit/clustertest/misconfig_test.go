//go:build cluster

package clustertest_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/clustertest"
)

// TestClusterMisconfiguration: on a cluster client, a queue whose keys carry
// no hash tag is refused when the Queue, Worker or QueueEvents is built,
// with an error that says how to fix it, and nothing reaches Redis.
func TestClusterMisconfiguration(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	c, rdb := clusterClient(t)
	base := clustertest.UniquePrefix()
	universal := redis.NewUniversalClient(&redis.UniversalOptions{Addrs: c.Addrs()})
	t.Cleanup(func() { _ = universal.Close() })

	noop := drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return nil, nil })
	build := map[string]func(rdb redis.UniversalClient, prefix, name string) error{
		"Queue": func(rdb redis.UniversalClient, prefix, name string) error {
			_, err := drover.NewQueue(rdb, name, &drover.QueueOptions{Prefix: prefix})
			return err
		},
		"Worker": func(rdb redis.UniversalClient, prefix, name string) error {
			_, err := drover.NewWorker(rdb, name, noop, &drover.WorkerOptions{Prefix: prefix})
			return err
		},
		"QueueEvents": func(rdb redis.UniversalClient, prefix, name string) error {
			_, err := drover.NewQueueEvents(rdb, name, &drover.QueueEventsOptions{Prefix: prefix})
			return err
		},
	}

	t.Run("NoHashTagIsRefused", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name   string
			rdb    redis.UniversalClient
			prefix string
			queue  string
			// wantFix are the fixes the error must spell out.
			wantFix []string
		}{
			{name: "PlainNames", rdb: rdb, prefix: base, queue: "emails",
				wantFix: []string{`Prefix: "{` + base + `}"`, `"{emails}"`}},
			{name: "DefaultPrefix", rdb: rdb, prefix: "", queue: "emails",
				wantFix: []string{`Prefix: "{bull}"`, `"{emails}"`}},
			{name: "EmptyTag", rdb: rdb, prefix: "{}" + base, queue: "emails",
				wantFix: []string{"hash tag"}},
			{name: "UnclosedTag", rdb: rdb, prefix: base + "{", queue: "emails",
				wantFix: []string{"hash tag"}},
			{name: "UniversalClientInClusterMode", rdb: universal, prefix: base, queue: "emails",
				wantFix: []string{`Prefix: "{` + base + `}"`}},
		}
		for _, tt := range tests {
			for kind, f := range build {
				err := f(tt.rdb, tt.prefix, tt.queue)
				require.Error(t, err, "%s/%s", tt.name, kind)
				require.ErrorIs(t, err, drover.ErrInvalidOption, "%s/%s", tt.name, kind)
				require.Contains(t, err.Error(), "Redis Cluster", "%s/%s", tt.name, kind)
				require.Contains(t, err.Error(), "CROSSSLOT", "%s/%s: the error says what would go wrong", tt.name, kind)
				require.Contains(t, err.Error(), "hash tag", "%s/%s", tt.name, kind)
				for _, fix := range tt.wantFix {
					require.Contains(t, err.Error(), fix, "%s/%s: the error says how to fix it", tt.name, kind)
				}
			}
		}
		n, err := clustertest.CountKeys(ctx, rdb, base)
		require.NoError(t, err)
		require.Zero(t, n, "refused constructions write nothing")
		n, err = clustertest.CountKeys(ctx, rdb, "{}"+base)
		require.NoError(t, err)
		require.Zero(t, n)
	})

	t.Run("HashTagIsAccepted", func(t *testing.T) {
		t.Parallel()
		tests := []struct {
			name, prefix, queue string
		}{
			{name: "TagInPrefix", prefix: "{" + base + "-p}", queue: "emails"},
			{name: "TagInQueueName", prefix: base + "-n", queue: "{emails}"},
			{name: "TagInsideQueueName", prefix: base + "-i", queue: "emails{shard-1}"},
		}
		for _, tt := range tests {
			for kind, f := range build {
				require.NoError(t, f(rdb, tt.prefix, tt.queue), "%s/%s", tt.name, kind)
			}
		}
	})

	t.Run("SentinelNeedsNoTag", func(t *testing.T) {
		t.Parallel()
		// A failover client talks to one master: every key is local.
		frdb := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "unused", SentinelAddrs: []string{"127.0.0.1:1"}})
		t.Cleanup(func() { _ = frdb.Close() })
		for kind, f := range build {
			require.NoError(t, f(frdb, base, "emails"), kind)
		}
	})
}
