package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// countCommands is a go-redis hook that counts the commands sent,
// pipelined ones included.
type countCommands struct{ n atomic.Int64 }

func (c *countCommands) DialHook(next redis.DialHook) redis.DialHook { return next }
func (c *countCommands) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { c.n.Add(1); return next(ctx, cmd) }
}
func (c *countCommands) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { c.n.Add(int64(len(cmds))); return next(ctx, cmds) }
}

// TestOverviewManyQueuesWithDelayedJobs: the overview of many queues that
// each hold a few delayed jobs reads each delayed set's size, not its
// histogram (about 240 ZCOUNTs a queue, for a clustering alert that needs
// ClusterMinJobs jobs): with 5,000 such queues the overview took 7.5 s
// and its first read ran past the 10 s read bound (503). The storm alerts
// still come: a queue with enough delayed jobs gets its histogram read.
func TestOverviewManyQueuesWithDelayedJobs(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct, prefix := redistest.Client(t)
	const queues = 200
	for i := range queues {
		q, err := drover.NewQueue(direct, fmt.Sprintf("q%03d", i), &drover.QueueOptions{Prefix: prefix})
		require.NoError(t, err)
		_, err = q.Add(ctx, "x", nil, &drover.JobOptions{Delay: time.Hour})
		require.NoError(t, err)
	}
	// One queue clusters: 5 delayed jobs due together, over a threshold of 5.
	storm, err := drover.NewQueue(direct, "storm", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	for range 5 {
		_, err = storm.Add(ctx, "x", nil, &drover.JobOptions{Delay: time.Minute})
		require.NoError(t, err)
	}

	opt := *direct.Options()
	rdb := redis.NewClient(&opt)
	t.Cleanup(func() { _ = rdb.Close() })
	hook := &countCommands{}
	rdb.AddHook(hook)
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix, Storm: &inspect.StormOptions{ClusterMinJobs: 5}})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ins.Close(context.Background()) })
	h, err := dashboard.New(ins, &dashboard.Options{AnonymousRole: dashboard.RoleViewer})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close(context.Background()) })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	c := &client{t: t, base: srv.URL + "/", headers: map[string]string{}, hc: &http.Client{Timeout: 30 * time.Second}}

	var ov dashboard.Overview
	require.Equal(t, http.StatusOK, c.get("api/overview", &ov)) // discovery, warm-up
	require.Len(t, ov.Queues, queues+1)
	before := hook.n.Load()
	require.Equal(t, http.StatusOK, c.get("api/overview", &ov))
	used := hook.n.Load() - before
	t.Logf("%d commands for %d queues", used, queues+1)
	require.Less(t, used, int64(30*(queues+1)), "commands per queue: %d", used/(queues+1))
	var kinds []string
	for _, a := range ov.Alerts {
		kinds = append(kinds, a.Queue+":"+a.Kind)
	}
	require.Equal(t, []string{"storm:clustering"}, kinds)
}
