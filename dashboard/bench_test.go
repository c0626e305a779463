package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/bigqueue"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// BenchmarkBigQueue measures the dashboard's reads on a queue of
// DROVER_BENCH_JOBS jobs (default 1,000,000) in a redis-server of its own:
// /api/overview, /metrics, the queue page, the failed jobs' first page, the
// storm analytics, the job page and the work of `drover queues` (a fresh
// Inspector, the overview and delayed stats), with a fresh published queue
// list and cold (none: the registry is read).
//
//	go test -run '^$' -bench BigQueue -benchtime 20x ./dashboard/
func BenchmarkBigQueue(b *testing.B) {
	ctx := context.Background()
	n := 1_000_000
	if v := os.Getenv("DROVER_BENCH_JOBS"); v != "" {
		var err error
		n, err = strconv.Atoi(v)
		require.NoError(b, err)
	}
	srv, err := redistest.Start()
	require.NoError(b, err)
	b.Cleanup(srv.Stop)
	rdb := srv.Client(b)
	const prefix = "bench"
	start := time.Now()
	require.NoError(b, bigqueue.Load(ctx, rdb, prefix+":q:", n, bigqueue.Mixed))
	b.Logf("loaded %d jobs in %s", n, time.Since(start).Round(time.Millisecond))

	ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix})
	require.NoError(b, err)
	b.Cleanup(func() { _ = ins.Close(ctx) })
	h, err := dashboard.New(ins, nil)
	require.NoError(b, err)
	hs := httptest.NewServer(h)
	b.Cleanup(func() { hs.Close(); _ = h.Close(ctx) })
	hc := &http.Client{Timeout: time.Minute}
	get := func(b *testing.B, path string) {
		resp, err := hc.Get(hs.URL + path)
		require.NoError(b, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		require.Equal(b, http.StatusOK, resp.StatusCode, path)
	}
	get(b, "/api/overview") // discovery's first scan, off the clock

	for _, bc := range []struct{ name, path string }{
		{"Overview", "/api/overview"},
		{"Metrics", "/metrics"},
		{"QueuePage", "/api/queues/q"},
		{"QueuePageJobs", "/api/queues/q/jobs?state=waiting"},
		{"FailedPage", "/api/queues/q/jobs?state=failed"},
		{"Storm", "/api/queues/q/delayed"},
		{"JobPage", "/api/queues/q/jobs/" + strconv.Itoa(n/2+1)},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				get(b, bc.path)
			}
		})
	}
	for _, cold := range []bool{false, true} {
		name := "DroverQueues"
		if cold {
			// As `drover queues` run alone: no fresh published list, so
			// the listing reads the registry (after the dashboard's
			// first scan seeded it).
			name = "DroverQueuesCold"
			require.NoError(b, ins.Close(ctx)) // the dashboard's loop publishes no more
		}
		b.Run(name, func(b *testing.B) { droverQueues(ctx, b, rdb, prefix, cold) })
	}
}

// droverQueues is the work of `drover queues`: a fresh Inspector, the
// overview and delayed stats.
func droverQueues(ctx context.Context, b *testing.B, rdb *redis.Client, prefix string, cold bool) {
	for b.Loop() {
		if cold {
			b.StopTimer()
			require.NoError(b, rdb.Del(ctx, keys.Discovery(prefix)).Err())
			b.StartTimer()
		}
		cli, err := inspect.New(rdb, &inspect.Options{Prefix: prefix})
		require.NoError(b, err)
		infos, err := cli.Overview(ctx)
		require.NoError(b, err)
		for _, info := range infos {
			if info.Counts.Delayed > 0 {
				_, err := cli.DelayedStats(ctx, info.Name)
				require.NoError(b, err)
			}
		}
		require.NoError(b, cli.Close(ctx))
		require.Len(b, infos, 1, fmt.Sprint(infos))
	}
}
