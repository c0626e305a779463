package drover_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// testBundle is what most tests need: a client, a unique prefix, a queue.
type testBundle struct {
	rdb    *redis.Client
	prefix string
	name   string
	queue  *drover.Queue
}

func setupQueue(t *testing.T) *testBundle { return setupQueueTB(t) }

// ownServer starts a redis-server for this test alone (with the extra
// args) and returns a client of it and queue "q" on it with opts: for tests
// that read server-wide counters (INFO) or change the server's settings.
func ownServer(t *testing.T, opts *drover.QueueOptions, args ...string) (*redis.Client, *drover.Queue) {
	t.Helper()
	srv, err := redistest.Start(args...)
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	rdb := srv.Client(t)
	q, err := drover.NewQueue(rdb, "q", opts)
	require.NoError(t, err)
	return rdb, q
}

func setupQueueTB(t testing.TB) *testBundle {
	t.Helper()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	return &testBundle{rdb: rdb, prefix: prefix, name: "q", queue: q}
}

// startWorker starts a worker on the bundle's queue, closed at test end.
func (b *testBundle) startWorker(t *testing.T, proc drover.ProcessorFunc, opts *drover.WorkerOptions) *drover.Worker {
	t.Helper()
	o := drover.WorkerOptions{}
	if opts != nil {
		o = *opts
	}
	o.Prefix = b.prefix
	w, err := drover.NewWorker(b.rdb, b.name, proc, &o)
	require.NoError(t, err)
	require.NoError(t, w.Start(context.Background()))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		require.NoError(t, w.Close(ctx))
	})
	return w
}

// waitState waits until job id is in state.
func (b *testBundle) waitState(t *testing.T, id string, state drover.JobState) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, "job "+id+" to be "+string(state), func() bool {
		s, err := b.queue.GetJobState(context.Background(), id)
		require.NoError(t, err)
		return s == state
	})
}

// events reads the whole events stream.
func (b *testBundle) events(t *testing.T) []drover.Event {
	t.Helper()
	ctx := context.Background()
	// Read up to the stream's last entry as it is now, however long each
	// read takes (a read that timed out after 30 ms was taken for the
	// stream's end on a loaded machine, and the events came back empty).
	last, err := b.rdb.XRevRangeN(ctx, b.prefix+":"+b.name+":events", "+", "-", 1).Result()
	require.NoError(t, err)
	if len(last) == 0 {
		return nil
	}
	qe, err := drover.NewQueueEvents(b.rdb, b.name, &drover.QueueEventsOptions{Prefix: b.prefix, LastEventID: "0", BlockTimeout: 10 * time.Millisecond})
	require.NoError(t, err)
	var out []drover.Event
	for {
		rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		ev, err := qe.Next(rctx)
		cancel()
		require.NoError(t, err, "reading the events up to %s", last[0].ID)
		out = append(out, ev)
		if ev.ID == last[0].ID {
			return out
		}
	}
}

// eventNames lists "name:jobId[:prev]" for compact comparisons.
func eventNames(evs []drover.Event) []string {
	out := make([]string, 0, len(evs))
	for _, e := range evs {
		s := string(e.Name)
		if e.JobID != "" {
			s += ":" + e.JobID
		}
		if e.Prev != "" {
			s += ":" + e.Prev
		}
		out = append(out, s)
	}
	return out
}

// recorder is a processor that records the jobs it ran.
type recorder struct {
	mu   sync.Mutex
	runs []string
}

func (r *recorder) add(id string) {
	r.mu.Lock()
	r.runs = append(r.runs, id)
	r.mu.Unlock()
}

func (r *recorder) list() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.runs...)
}

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }

// numberedJobs is n bulk jobs named name, job i with data {"i": i}.
func numberedJobs(name string, n int) []drover.BulkJob {
	jobs := make([]drover.BulkJob, n)
	for i := range jobs {
		jobs[i] = drover.BulkJob{Name: name, Data: map[string]int{"i": i}}
	}
	return jobs
}
