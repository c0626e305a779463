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
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// loadJobs writes n jobs into queue under prefix with a Lua loader, 50k per
// call: BullMQ job hashes (name, data, opts, timestamp, atm, ats), 90% in
// wait, 5% delayed, 3% completed, 2% failed.
const loadJobsLua = `
local base, from, to, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
for i = from, to do
  local id = tostring(i)
  local r = i % 100
  local atm = 0
  if r >= 95 then atm = 3 end
  redis.call("HSET", base .. id, "name", "job", "data", '{"n":' .. id .. '}', "opts", '{"attempts":3}',
    "timestamp", now, "delay", 0, "priority", 0, "atm", atm, "ats", atm)
  if r < 90 then
    redis.call("RPUSH", base .. "wait", id)
  elseif r < 95 then
    redis.call("ZADD", base .. "delayed", (now + i) * 4096 + (i % 4096), id)
  elseif r < 98 then
    redis.call("HSET", base .. id, "finishedOn", now, "processedOn", now, "returnvalue", "null")
    redis.call("ZADD", base .. "completed", now, id)
  else
    redis.call("HSET", base .. id, "finishedOn", now, "processedOn", now, "failedReason", "boom", "stacktrace", '["Error: boom"]')
    redis.call("ZADD", base .. "failed", now, id)
  end
end
redis.call("SET", base .. "id", to)
redis.call("XADD", base .. "events", "*", "event", "added")
return to
`

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
	loader := redis.NewScript(loadJobsLua)
	start := time.Now()
	for from := 1; from <= n; from += 50_000 {
		to := min(from+50_000-1, n)
		require.NoError(b, loader.Run(ctx, rdb, []string{prefix + ":q:wait"}, prefix+":q:", from, to, time.Now().UnixMilli()).Err())
	}
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
