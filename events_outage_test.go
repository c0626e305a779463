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
	proxy, viaProxy := faultproxy.StartClient(t, redistest.Shared(t).Addr, redis.Options{MaxRetries: -1, DialTimeout: 200 * time.Millisecond})

	var logs testkit.SyncBuffer
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

// TestQueueEventsRunOutlivesAHalfOpenConnection: the connection
// QueueEvents.Run blocks on goes half-open (a firewall or NAT on the path
// forgets it: it stays open and carries nothing, no reset reaches either
// side) while events keep being written; new connections work. With
// go-redis's default timeouts Run must notice (a blocking read ends at its
// block plus the client's 10 s grace), say so once, read again on a new
// connection and hand over every event written meanwhile, each once, in
// order; and Close of Run (ctx) still returns.
func TestQueueEventsRunOutlivesAHalfOpenConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct, prefix := redistest.Client(t)
	proxy, viaProxy := faultproxy.StartClient(t, redistest.Shared(t).Addr, redis.Options{}) // go-redis's default timeouts

	var logs testkit.SyncBuffer
	qe, err := drover.NewQueueEvents(viaProxy, "q", &drover.QueueEventsOptions{
		Prefix: prefix, LastEventID: "0", Logger: slog.New(slog.NewTextHandler(&logs, nil)),
	})
	require.NoError(t, err)
	q, err := drover.NewQueue(direct, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)

	var mu sync.Mutex
	var added []string
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
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
	var want []string
	add := func() {
		t.Helper()
		res, err := q.Add(ctx, "j", nil, nil)
		require.NoError(t, err)
		want = append(want, res.Job.ID)
	}
	add()
	testkit.WaitFor(t, 10*time.Second, "the first event", seen(1))
	time.Sleep(100 * time.Millisecond) // Run blocks on its next read
	proxy.Strand()
	for range 5 {
		add()
		time.Sleep(100 * time.Millisecond)
	}
	testkit.WaitFor(t, 30*time.Second, "the events written while Run's connection was half-open", seen(len(want)))
	add()
	testkit.WaitFor(t, 10*time.Second, "an event after", seen(len(want)))
	select {
	case err := <-done:
		t.Fatalf("Run returned: %v", err)
	default:
	}
	stop()
	require.NoError(t, recvWithin(t, done, 5*time.Second, "Run to return once its ctx ended"))
	mu.Lock()
	require.Equal(t, want, added, "every event once, in order")
	mu.Unlock()
	require.Equal(t, 1, strings.Count(logs.String(), "reading queue events failed"), logs.String())
}
