//go:build cluster

package clustertest_test

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
	"github.com/seed40057009/drover/internal/testkit/clustertest"
)

// clusterClient returns the shared cluster and a client of it, closed when
// the test ends.
func clusterClient(t testing.TB) (*clustertest.Cluster, *redis.ClusterClient) {
	t.Helper()
	c := clustertest.SharedCluster(t)
	rdb := c.NewClient(&redis.ClusterOptions{PoolSize: 64})
	t.Cleanup(func() { _ = rdb.Close() })
	return c, rdb
}

// testPrefix returns a fresh key prefix whose keys are deleted when the test
// ends: "{c<pid>-<n>}" when tagged (every queue under it shares one slot),
// else "c<pid>-<n>" (queue names must then carry the tag).
func testPrefix(t testing.TB, rdb *redis.ClusterClient, tagged bool) string {
	t.Helper()
	prefix := clustertest.UniquePrefix()
	if tagged {
		prefix = "{" + prefix + "}"
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := clustertest.DeletePrefix(ctx, rdb, prefix); err != nil {
			t.Logf("delete keys of prefix %s: %v", prefix, err)
		}
	})
	return prefix
}

func newQueue(t testing.TB, rdb redis.UniversalClient, prefix, name string) *drover.Queue {
	t.Helper()
	q, err := drover.NewQueue(rdb, name, &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	return q
}

// startWorker starts a drover worker, closed when the test ends.
func startWorker(t testing.TB, rdb redis.UniversalClient, prefix, name string, proc drover.ProcessorFunc, opts *drover.WorkerOptions) *drover.Worker {
	t.Helper()
	var o drover.WorkerOptions
	if opts != nil {
		o = *opts
	}
	o.Prefix = prefix
	w, err := drover.NewWorker(rdb, name, proc, &o)
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, w.Close(ctx))
	})
	return w
}

// waitCounts waits until the queue's counts of the given states equal want.
func waitCounts(t testing.TB, q *drover.Queue, timeout time.Duration, want map[drover.JobState]int64) {
	t.Helper()
	states := make([]drover.JobState, 0, len(want))
	for s := range want {
		states = append(states, s)
	}
	var last map[drover.JobState]int64
	deadline := time.Now().Add(timeout)
	for {
		got, err := q.GetJobCounts(context.Background(), states...)
		require.NoError(t, err)
		last = got
		match := true
		for s, n := range want {
			if got[s] != n {
				match = false
			}
		}
		if match {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queue %s: counts %v, want %v after %s", q.Name(), last, want, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// readEvents reads the queue's whole events stream.
func readEvents(t testing.TB, rdb redis.UniversalClient, prefix, name string) []drover.Event {
	t.Helper()
	qe, err := drover.NewQueueEvents(rdb, name, &drover.QueueEventsOptions{Prefix: prefix, LastEventID: "0", BlockTimeout: 10 * time.Millisecond})
	require.NoError(t, err)
	var out []drover.Event
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		ev, err := qe.Next(ctx)
		cancel()
		if err != nil {
			return out
		}
		out = append(out, ev)
	}
}

// countEvents counts events by name.
func countEvents(evs []drover.Event) map[string]int {
	m := map[string]int{}
	for _, e := range evs {
		m[string(e.Name)]++
	}
	return m
}

// logRecorder is a slog.Handler that keeps every Warn-and-up record, for
// tests that count and inspect a worker's warnings.
type logRecorder struct {
	mu    *sync.Mutex
	recs  *[]logRec
	attrs []slog.Attr
}

type logRec struct {
	msg  string // the constant message
	text string // level, message and attributes
}

func newLogRecorder() *logRecorder {
	return &logRecorder{mu: &sync.Mutex{}, recs: new([]logRec)}
}

func (h *logRecorder) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *logRecorder) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Level.String() + " " + r.Message)
	for _, a := range h.attrs {
		b.WriteString(" " + a.String())
	}
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	h.mu.Lock()
	*h.recs = append(*h.recs, logRec{msg: r.Message, text: b.String()})
	h.mu.Unlock()
	return nil
}

func (h *logRecorder) WithAttrs(attrs []slog.Attr) slog.Handler {
	c := *h
	c.attrs = append(append([]slog.Attr(nil), h.attrs...), attrs...)
	return &c
}

func (h *logRecorder) WithGroup(string) slog.Handler { return h }

// byMessage counts the records per message.
func (h *logRecorder) byMessage() map[string]int {
	h.mu.Lock()
	defer h.mu.Unlock()
	m := map[string]int{}
	for _, r := range *h.recs {
		m[r.msg]++
	}
	return m
}

// matching returns the records whose text contains s.
func (h *logRecorder) matching(s string) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []string
	for _, r := range *h.recs {
		if strings.Contains(r.text, s) {
			out = append(out, r.text)
		}
	}
	return out
}

// sample returns up to n record texts, one per distinct message.
func (h *logRecorder) sample(n int) []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	seen := map[string]bool{}
	var out []string
	for _, r := range *h.recs {
		if !seen[r.msg] && len(out) < n {
			seen[r.msg] = true
			out = append(out, r.text)
		}
	}
	return out
}

// TestPrefixesDoNotOverlap: the key helpers of one test never see another
// test's keys, though UniquePrefix's c<pid>-1 is the start of c<pid>-10
// (CI saw TestClusterFlowProducer count a key that a parallel test with the
// longer prefix deleted in between).
func TestPrefixesDoNotOverlap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, rdb := clusterClient(t)
	short := testPrefix(t, rdb, false)
	long := short + "0"
	t.Cleanup(func() { _ = clustertest.DeletePrefix(context.Background(), rdb, long) })
	for _, k := range []string{short + ":q:id", long + ":q:id", long + ":q:meta"} {
		require.NoError(t, rdb.Set(ctx, k, "1", time.Minute).Err())
	}

	n, err := clustertest.CountKeys(ctx, rdb, short)
	require.NoError(t, err)
	require.Equal(t, 1, n, "CountKeys(%q) counts only its own keys", short)

	require.NoError(t, clustertest.DeletePrefix(ctx, rdb, short))
	n, err = clustertest.CountKeys(ctx, rdb, long)
	require.NoError(t, err)
	require.Equal(t, 2, n, "DeletePrefix(%q) leaves %q's keys", short, long)
}
