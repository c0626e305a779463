package drover_test

import (
	"context"
	"log/slog"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/queuecheck"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/internal/testkit/traffic"
)

// TestMasterDemotedUnderLiveConnections: the Redis server a worker
// (concurrency 4), a QueueEvents, a job scheduler and a producer are
// connected to is demoted to a replica of another server for 2 s, as a
// failover (or an operator's REPLICAOF) does under live connections, then
// promoted back: for those 2 s every write drover sends is refused with
// READONLY. Without a restart of any of them, afterwards every job the
// producer added is completed and ran once (the locks, 20 s, outlast the
// demotion), each job sits in one state with no lock left, the scheduler
// runs again, the QueueEvents delivered a completed event for every
// completed job, and no warning is logged in a loop.
func TestMasterDemotedUnderLiveConnections(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	other := srv.Replica(t) // the server srv is demoted under
	rdb := srv.Client(t)
	orc := other.Client(t)
	admin := srv.Client(t)
	prefix := "demote"

	var logs testkit.SyncBuffer
	logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix, Logger: logger})
	require.NoError(t, err)
	_, err = q.UpsertJobScheduler(ctx, "tick", drover.RepeatOptions{Every: 100 * time.Millisecond}, nil)
	require.NoError(t, err)
	var runs testkit.Runs
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		runs.Ran(job.ID)
		time.Sleep(20 * time.Millisecond)
		return nil, nil
	}), &drover.WorkerOptions{Prefix: prefix, Concurrency: 4, LockDuration: 20 * time.Second, Logger: logger})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { require.NoError(t, w.Close(context.Background())) })

	qe, err := drover.NewQueueEvents(rdb, "q", &drover.QueueEventsOptions{
		Prefix: prefix, LastEventID: "0", BlockTimeout: 500 * time.Millisecond, Logger: logger,
	})
	require.NoError(t, err)
	completed := traffic.CountCompletions(t, qe)
	producer := traffic.Produce(t, q, "j", 10*time.Millisecond, 100*time.Millisecond)

	testkit.WaitFor(t, 20*time.Second, "processing under way", func() bool {
		n, err := q.GetJobCounts(ctx, drover.StateCompleted)
		require.NoError(t, err)
		return n[drover.StateCompleted] >= 50
	})
	// Demote, as a graceful failover does: srv's writes are paused until
	// the replica has every one, the replica takes over as master, srv
	// follows it (its live connections stay open), then the roles go back.
	// replicated waits until the replica acknowledged every write srv took
	// (WAIT itself waits out a pause).
	replicated := func() {
		t.Helper()
		testkit.WaitFor(t, 9*time.Second, "the replica to catch up", func() bool {
			inf, err := admin.Info(ctx, "replication").Result()
			require.NoError(t, err)
			var master, replica string
			for line := range strings.SplitSeq(inf, "\r\n") {
				if v, ok := strings.CutPrefix(line, "master_repl_offset:"); ok {
					master = v
				}
				if v, ok := strings.CutPrefix(line, "slave0:"); ok {
					for f := range strings.SplitSeq(v, ",") {
						if o, ok := strings.CutPrefix(f, "offset="); ok {
							replica = o
						}
					}
				}
			}
			return master != "" && master == replica
		})
	}
	host, port, _ := net.SplitHostPort(other.Addr)
	shost, sport, _ := net.SplitHostPort(srv.Addr)
	t0 := time.Now()
	require.NoError(t, admin.Do(ctx, "CLIENT", "PAUSE", 10000, "WRITE").Err())
	replicated()
	t1 := time.Now()
	require.NoError(t, orc.Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	t2 := time.Now()
	require.NoError(t, admin.Do(ctx, "REPLICAOF", host, port).Err())
	t3 := time.Now()
	require.NoError(t, admin.Do(ctx, "CLIENT", "UNPAUSE").Err())
	demoted := time.Now()
	t.Logf("pause+wait %s, promote %s, demote %s, unpause %s", t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), demoted.Sub(t3))
	testkit.WaitFor(t, 10*time.Second, "srv to sync from the other server", func() bool {
		inf, err := admin.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(inf, "master_link_status:up")
	})
	time.Sleep(2*time.Second - time.Since(demoted))
	readonly := strings.Count(logs.String(), "READONLY")
	// Back: srv master again, the other server its replica.
	require.NoError(t, admin.Do(ctx, "REPLICAOF", "NO", "ONE").Err())
	require.NoError(t, orc.Do(ctx, "REPLICAOF", shost, sport).Err())
	promoted := time.Now()
	t.Logf("srv read-only for %s; %d READONLY warnings meanwhile", promoted.Sub(demoted).Round(time.Millisecond), readonly)

	before := ticks(t, q)
	testkit.WaitFor(t, 20*time.Second, "a scheduler run after the promotion", func() bool { return ticks(t, q) > before })
	time.Sleep(500 * time.Millisecond)
	producer.Stop()
	_, err = q.RemoveJobScheduler(ctx, "tick")
	require.NoError(t, err)
	drained := func() bool {
		n, err := q.GetJobCounts(ctx)
		require.NoError(t, err)
		return n[drover.StateWaiting]+n[drover.StateActive]+n[drover.StateDelayed]+n[drover.StatePrioritized] == 0
	}
	for start := time.Now(); !drained() && time.Since(start) < 20*time.Second; {
		time.Sleep(50 * time.Millisecond)
	}
	if !drained() {
		n, _ := q.GetJobCounts(ctx)
		act, _ := rdb.LRange(ctx, prefix+":q:active", 0, -1).Result()
		for _, id := range act {
			h, _ := rdb.HGetAll(ctx, prefix+":q:"+id).Result()
			l, _ := rdb.Get(ctx, prefix+":q:"+id+":lock").Result()
			t.Logf("active %s: lock %q ran %d hash %v", id, l, runs.Counts()[id], h)
		}
		t.Fatalf("the queue did not drain: %v; warnings:\n%s", n, logs.String())
	}

	st, err := queuecheck.Read(ctx, rdb, prefix, "q")
	require.NoError(t, err)
	v, err := st.Violations(ctx)
	require.NoError(t, err)
	require.Empty(t, v)
	require.Empty(t, st.In("failed"))
	ran := runs.Counts()
	for _, a := range producer.Added() {
		s, err := q.GetJobState(ctx, a.ID)
		require.NoError(t, err)
		require.Equal(t, drover.StateCompleted, s, "job %s", a.ID)
	}
	addErrs := producer.Errors()
	t.Logf("%d jobs added, %d add errors (retried), e.g. %v", len(producer.Added()), len(addErrs), addErrs[:min(2, len(addErrs))])
	done := st.In("completed")
	for _, id := range done {
		require.Equal(t, 1, ran[id], "job %s ran once", id)
	}
	testkit.WaitFor(t, 10*time.Second, "a completed event for every completed job", func() bool {
		return len(completed.Missing(done)) == 0
	})
	counts := map[string]int{}
	for _, m := range warningMsg.FindAllStringSubmatch(logs.String(), -1) {
		counts[m[1]]++
	}
	t.Logf("warnings by message: %v", counts)
	for msg, n := range counts {
		require.LessOrEqual(t, n, 12, "warning %s repeated", msg)
	}
}

var warningMsg = regexp.MustCompile(`msg="([^"]*)"`)

// ticks counts the scheduler runs of q that completed.
func ticks(t *testing.T, q *drover.Queue) int {
	t.Helper()
	ids, err := q.GetJobIDs(context.Background(), []drover.JobState{drover.StateCompleted}, 0, -1, true)
	require.NoError(t, err)
	n := 0
	for _, id := range ids {
		if strings.HasPrefix(id, "repeat:") {
			n++
		}
	}
	return n
}
