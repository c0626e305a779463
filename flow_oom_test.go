package drover_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/outage"
	"github.com/seed40057009/drover/internal/testkit/queuecheck"
)

// TestFlowAddWhenRedisIsOutOfMemory: Redis is full (maxmemory,
// noeviction) when a flow of a parent and 500 children of 1 KB each is
// added. The add fails with Redis's OOM (an outage: the caller may add it
// again) and stores nothing: no parent waiting for children that never
// came, no child without its parent. Once memory is freed the same flow
// is added whole.
func TestFlowAddWhenRedisIsOutOfMemory(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, _ := ownServer(t, nil, "--maxmemory-policy", "noeviction")
	fp, err := drover.NewFlowProducer(rdb, nil)
	require.NoError(t, err)
	flow := drover.FlowJob{Name: "parent", QueueName: "q", Opts: &drover.JobOptions{JobID: "root"}}
	for i := range 500 {
		flow.Children = append(flow.Children, drover.FlowJob{Name: "child", QueueName: "q",
			Data: map[string]string{"pad": strings.Repeat("x", 1000)}, Opts: &drover.JobOptions{JobID: "c" + strconv.Itoa(i)}})
	}
	info, err := rdb.Info(ctx, "memory").Result()
	require.NoError(t, err)
	used := infoInt(t, info, "used_memory")
	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", strconv.FormatInt(used-1024, 10)).Err())
	_, err = fp.Add(ctx, flow)
	require.Error(t, err)
	require.Equal(t, "OOM", outage.ReplyCode(err), "%v", err)
	n, err := rdb.DBSize(ctx).Result()
	require.NoError(t, err)
	st, err := queuecheck.Read(ctx, rdb, "bull", "q")
	require.NoError(t, err)
	require.Empty(t, st.Where, "a refused flow left jobs")

	require.NoError(t, rdb.ConfigSet(ctx, "maxmemory", "0").Err())
	node, err := fp.Add(ctx, flow)
	require.NoError(t, err)
	require.Len(t, node.Children, 500)
	st, err = queuecheck.Read(ctx, rdb, "bull", "q")
	require.NoError(t, err)
	require.Len(t, st.Where, 501)
	v, err := st.Violations(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
	t.Logf("keys while refused: %d", n)
}
