package drover_test

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestWorkerOutageLogsOncePerMessage: while Redis refuses connections for
// 4 s, a worker at concurrency 20 with jobs in flight fails every fetch,
// lock renewal and result write. Each warning is written once, its repeats
// held back (lognote.Window is 5 s), and the worker processes every job
// once Redis is back. Before, the worker wrote a line per failed call: the
// first warning was lost among hundreds.
func TestWorkerOutageLogsOncePerMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Shared(t)
	proxy, rdb := faultproxy.StartClient(t, srv.Addr, redis.Options{MaxRetries: 1, DialTimeout: 100 * time.Millisecond, ReadTimeout: time.Second, WriteTimeout: time.Second})
	direct, prefix := redistest.Client(t)
	q, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)

	var logs testkit.SyncBuffer
	release := make(chan struct{})
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		if job.Name == "held" {
			<-release
		}
		return nil, nil
	}), &drover.WorkerOptions{Prefix: prefix, Concurrency: 20, LockDuration: 2 * time.Second,
		StalledInterval: time.Second, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() {
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		require.NoError(t, w.Close(cctx))
	})
	for range 10 {
		_, err := q.Add(ctx, "held", nil, nil)
		require.NoError(t, err)
	}
	testkit.WaitFor(t, 10*time.Second, "10 jobs active", func() bool {
		c, err := q.GetJobCounts(ctx, drover.StateActive)
		return err == nil && c[drover.StateActive] == 10
	})

	proxy.Refuse()
	proxy.ResetAll()
	time.Sleep(2 * time.Second)
	close(release) // results to write while Redis is away
	time.Sleep(2 * time.Second)
	require.NoError(t, proxy.Listen())

	testkit.WaitFor(t, 30*time.Second, "every job completed once Redis is back", func() bool {
		c, err := q.GetJobCounts(ctx, drover.StateCompleted)
		return err == nil && c[drover.StateCompleted] == 10
	})
	counts := map[string]int{}
	for _, line := range strings.Split(logs.String(), "\n") {
		if !strings.Contains(line, "level=WARN") {
			continue
		}
		i := strings.Index(line, "msg=")
		if i < 0 {
			continue
		}
		msg := line[i+len("msg="):]
		if msg != "" && msg[0] == '"' {
			msg = msg[1 : strings.Index(msg[1:], "\"")+1]
		} else if j := strings.IndexByte(msg, ' '); j >= 0 {
			msg = msg[:j]
		}
		counts[msg]++
	}
	t.Logf("warnings per message: %v", counts)
	require.NotEmpty(t, counts, "the outage was logged")
	for msg, n := range counts {
		if msg == "job stalled: moved back to wait" {
			continue // one line per job: each is news, not a repeat
		}
		// One line at the start, at most one more after the window (the
		// outage is 4 s, its recovery may cross the 5 s mark).
		require.LessOrEqual(t, n, 2, "message %q written %d times:\n%s", msg, n, logs.String())
	}
}
