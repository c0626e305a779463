package drover_test

import (
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestQueueEventsRunOutlivesAnOutage: QueueEvents.Run reads through a proxy
// that resets its connection and refuses new ones for a while. Run must
// not return: once Redis answers again it goes on from the last event it
// handed over, so the events written during the outage arrive, each once,
// and a warning says what happened. (Before, Run returned the connection
// error and the events after it were never read.)
func TestQueueEventsRunOutlivesAnOutage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct, prefix := redistest.Client(t)
	proxy, err := faultproxy.Start(redistest.Shared(t).Addr)
	require.NoError(t, err)
	t.Cleanup(func() { _ = proxy.Close() })
	viaProxy := redis.NewClient(&redis.Options{Addr: proxy.Addr, MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = viaProxy.Close() })

	var logs syncBuffer
	qe, err := drover.NewQueueEvents(viaProxy, "q", &drover.QueueEventsOptions{
		Prefix: prefix, LastEventID: "0", BlockTimeout: 50 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	require.NoError(t, err)
	q, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)

	var mu sync.Mutex
	var added []string
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- qe.Run(runCtx, func(ev drover.Event) error {
			if ev.Name == "added" {
				mu.Lock()
				added = append(added, ev.JobID)
				mu.Unlock()
			}
			return nil
		})
	}()
	seen := func(n int) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return len(added) >= n }
	}

	first, err := q.Add(ctx, "before", nil, nil)
	require.NoError(t, err)
	testkit.WaitFor(t, 10*time.Second, "the first event", seen(1))

	proxy.Refuse()
	proxy.ResetAll()
	testkit.WaitFor(t, 10*time.Second, "Run to notice the outage", func() bool {
		return strings.Contains(logs.String(), "reading queue events failed")
	})
	second, err := q.Add(ctx, "during", nil, nil)
	require.NoError(t, err)
	select {
	case err := <-done:
		t.Fatalf("Run returned during the outage: %v", err)
	case <-time.After(300 * time.Millisecond):
	}
	require.NoError(t, proxy.Listen())
	testkit.WaitFor(t, 15*time.Second, "the event written during the outage", seen(2))
	third, err := q.Add(ctx, "after", nil, nil)
	require.NoError(t, err)
	testkit.WaitFor(t, 10*time.Second, "the event after the outage", seen(3))

	stop()
	require.NoError(t, <-done)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, []string{first.Job.ID, second.Job.ID, third.Job.ID}, added)
	require.Contains(t, logs.String(), "reading queue events again")
}
