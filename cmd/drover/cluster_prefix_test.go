package main

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestClusterPrefixWithoutHashTagIsAUsageError: on a Redis Cluster, `drover
// add` (and scheduler upsert) with a prefix and queue name without a hash
// tag said 'invalid option: ... put a hash tag in the prefix (Prefix:
// "{bull}")', the library's Go option, and exited 1 as if Redis had
// refused. It is a bad --prefix or queue name: exit 2, naming --prefix,
// and nothing is written.
func TestClusterPrefixWithoutHashTagIsAUsageError(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// A one-node cluster holding every slot.
	srv, err := redistest.Start("--cluster-enabled", "yes")
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	rdb := srv.Client(t)
	require.NoError(t, rdb.Do(ctx, "CLUSTER", "ADDSLOTSRANGE", "0", "16383").Err())
	require.Eventually(t, func() bool {
		info, err := rdb.ClusterInfo(ctx).Result()
		return err == nil && bytes.Contains([]byte(info), []byte("cluster_state:ok"))
	}, 20*time.Second, 50*time.Millisecond)

	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := (&Main{Stdout: &out, Stderr: &out}).Run(ctx, append(args, "--redis", "redis://"+srv.Addr))
		return out.String(), err
	}
	for _, args := range [][]string{
		{"add", "mail", "send"},
		{"scheduler", "upsert", "mail", "tick", "--every", "1s"},
	} {
		_, err := run(args...)
		require.EqualError(t, err, `queue "mail" with --prefix "bull" on a Redis Cluster: its keys would spread over many hash slots `+
			`and its scripts would fail with CROSSSLOT; put a hash tag in the prefix (--prefix '{bull}') or in the queue name ('{mail}')`, args)
		require.Equal(t, 2, exitCode(err), args)
	}
	n, err := rdb.DBSize(ctx).Result()
	require.NoError(t, err)
	require.Zero(t, n, "nothing written")

	out, err := run("add", "mail", "send", "--prefix", "{bull}")
	require.NoError(t, err, out)
	require.Equal(t, "added job 1 to mail\n", out)
}
