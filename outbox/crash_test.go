package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/outbox"
)

// The crash test of the outbox (issue 4, acceptance 4): relays are killed
// 100 times at random points, most of them between the Redis write and the
// row update, and every outbox row still becomes exactly one job.
const crashKills = 100

// Where a relay dies. The hooks sit at the steps of a batch; "timed" is a
// SIGKILL from outside after a random delay, which can land anywhere,
// including between the chunks of one AddBulk.
const (
	stepBeforeAdd    = "before_add"
	stepAfterAdd     = "after_add" // between the Redis write and the row update
	stepBeforeCommit = "before_commit"
	stepTimed        = "timed"
)

// Environment of a relay child process.
const (
	childEnv         = "DROVER_OUTBOX_RELAY" // "postgres" or "sqlite"
	childDSNEnv      = "DROVER_OUTBOX_DSN"
	childRedisEnv    = "DROVER_OUTBOX_REDIS"
	childPrefixEnv   = "DROVER_OUTBOX_PREFIX"
	childBatchEnv    = "DROVER_OUTBOX_BATCH"
	childChunkEnv    = "DROVER_OUTBOX_CHUNK"
	childKillStepEnv = "DROVER_OUTBOX_KILL_STEP"
	childKillAtEnv   = "DROVER_OUTBOX_KILL_AT" // the n-th time the step is reached
)

// pickStep draws where the next relay dies: half of the time between the
// Redis write and the row update. Without timed kills (a relay in this
// process cannot be killed from outside), those go there too.
func pickStep(rng *rand.Rand, timed bool) string {
	switch n := rng.IntN(20); {
	case n >= 16 && !timed:
		return stepAfterAdd
	case n < 10:
		return stepAfterAdd
	case n < 13:
		return stepBeforeAdd
	case n < 16:
		return stepBeforeCommit
	default:
		return stepTimed
	}
}

// killHooks returns test hooks that call die the killAt-th time step is
// reached.
func killHooks(step string, killAt int, die func(ctx context.Context) error) (beforeAdd, afterAdd, beforeCommit func(context.Context) error) {
	n := 0
	hook := func(ctx context.Context) error {
		n++
		if n == killAt {
			return die(ctx)
		}
		return nil
	}
	switch step {
	case stepBeforeAdd:
		beforeAdd = hook
	case stepAfterAdd:
		afterAdd = hook
	case stepBeforeCommit:
		beforeCommit = hook
	}
	return beforeAdd, afterAdd, beforeCommit
}

// runChild is the main of a relay child process: it relays every pending row
// and exits 0, unless its kill hook kills it first.
func runChild() int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "relay child:", err)
		return 1
	}
	ctx := context.Background()
	batch, err1 := strconv.Atoi(os.Getenv(childBatchEnv))
	chunk, err2 := strconv.Atoi(os.Getenv(childChunkEnv))
	killAt, err3 := strconv.Atoi(os.Getenv(childKillAtEnv))
	if err := errors.Join(err1, err2, err3); err != nil {
		return fail(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: os.Getenv(childRedisEnv)})
	defer rdb.Close()

	var newRelay func(*outbox.RelayOptions) (*outbox.Relay, error)
	switch os.Getenv(childEnv) {
	case "postgres":
		pool, err := pgxpool.New(ctx, os.Getenv(childDSNEnv))
		if err != nil {
			return fail(err)
		}
		defer pool.Close()
		ob := outbox.NewPostgres(pool)
		newRelay = func(o *outbox.RelayOptions) (*outbox.Relay, error) { return outbox.NewRelay(ob, rdb, o) }
	case "sqlite":
		db, err := sql.Open("sqlite", os.Getenv(childDSNEnv))
		if err != nil {
			return fail(err)
		}
		defer db.Close()
		ob := outbox.NewSQLite(db)
		// A killed relay's claims hold its rows this long: short, so the
		// test's last relay finds them free within its wait.
		outbox.SetSQLiteLease(ob, time.Second)
		newRelay = func(o *outbox.RelayOptions) (*outbox.Relay, error) { return outbox.NewRelay(ob, rdb, o) }
	default:
		return fail(fmt.Errorf("unknown %s %q", childEnv, os.Getenv(childEnv)))
	}

	relay, err := newRelay(&outbox.RelayOptions{
		QueueOptions: &drover.QueueOptions{Prefix: os.Getenv(childPrefixEnv), AddBulkChunk: chunk},
		BatchSize:    batch,
	})
	if err != nil {
		return fail(err)
	}
	beforeAdd, afterAdd, beforeCommit := killHooks(os.Getenv(childKillStepEnv), killAt, func(context.Context) error {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	})
	outbox.SetTestHooks(relay, beforeAdd, afterAdd, beforeCommit)
	if _, err := relay.Flush(ctx); err != nil {
		return fail(err)
	}
	return 0
}

func TestRelayCrashes(t *testing.T) {
	t.Parallel()

	for _, dialect := range dialects {
		t.Run(dialect.name, func(t *testing.T) {
			t.Parallel()

			t.Run("KilledProcesses", func(t *testing.T) {
				t.Parallel()
				crashRelays(t, dialect.setup(t), killChildRelay, true)
			})
			t.Run("AbortedInProcess", func(t *testing.T) {
				t.Parallel()
				crashRelays(t, dialect.setup(t), abortRelay, false)
			})
		})
	}
}

// crashFunc runs one relay over the pending rows and makes it die at step
// (the killAt-th time it is reached), with batches of batch rows and AddBulk
// chunks of chunk jobs. It reports whether the relay died.
type crashFunc func(t *testing.T, bundle *testBundle, rng *rand.Rand, step string, killAt, batch, chunk int) bool

// killChildRelay runs the relay as a child process and SIGKILLs it.
func killChildRelay(t *testing.T, bundle *testBundle, rng *rand.Rand, step string, killAt, batch, chunk int) bool {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$") // runChild takes over in TestMain
	cmd.Env = append(os.Environ(),
		childEnv+"="+bundle.dialect,
		childDSNEnv+"="+bundle.dsn,
		childRedisEnv+"="+redistest.Shared(t).Addr,
		childPrefixEnv+"="+bundle.prefix,
		childBatchEnv+"="+strconv.Itoa(batch),
		childChunkEnv+"="+strconv.Itoa(chunk),
		childKillStepEnv+"="+step,
		childKillAtEnv+"="+strconv.Itoa(killAt),
	)
	cmd.Stderr = os.Stderr
	require.NoError(t, cmd.Start())
	if step == stepTimed {
		// A random moment of the child's life: starting, connecting, or
		// anywhere in a batch.
		time.Sleep(time.Duration(rng.IntN(40_000)) * time.Microsecond)
		_ = cmd.Process.Kill()
	}
	err := cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
		return true
	}
	require.NoError(t, err, "a relay child that was not killed must finish cleanly")
	return false
}

// abortRelay runs the relay in this process; the hook aborts the batch as a
// crash would (on PostgreSQL, its transaction rolls back; on SQLite, its
// marks are never written).
func abortRelay(t *testing.T, bundle *testBundle, rng *rand.Rand, step string, killAt, batch, chunk int) bool {
	t.Helper()
	errCrash := errors.New("crash")
	relay := bundle.newRelay(t, &outbox.RelayOptions{
		QueueOptions: &drover.QueueOptions{Prefix: bundle.prefix, AddBulkChunk: chunk},
		BatchSize:    batch,
	})
	beforeAdd, afterAdd, beforeCommit := killHooks(step, killAt, func(context.Context) error { return errCrash })
	outbox.SetTestHooks(relay, beforeAdd, afterAdd, beforeCommit)
	_, err := relay.Flush(context.Background())
	if errors.Is(err, errCrash) {
		return true
	}
	require.NoError(t, err)
	return false
}

func crashRelays(t *testing.T, bundle *testBundle, crash crashFunc, timed bool) {
	t.Helper()
	ctx := context.Background()
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	queues := []string{"q1", "q2"}
	rowQueue := make(map[int64]string) // row id -> queue

	var (
		kills, runs int
		orphans     int // pending rows seen with their job in Redis
		byStep      = make(map[string]int)
	)
	for kills < crashKills {
		runs++
		require.Less(t, runs, 5*crashKills, "relays keep finishing before they are killed (seed %d)", seed)

		var jobs []job
		for range 1 + rng.IntN(12) {
			jobs = append(jobs, job{queue: queues[rng.IntN(len(queues))], name: "n"})
		}
		bundle.add(t, jobs...)
		rows := bundle.rows(t)
		for _, r := range rows {
			rowQueue[r.ID] = r.Queue
		}

		step := pickStep(rng, timed)
		batch := 1 + rng.IntN(8)
		batches := (len(pending(rows)) + batch - 1) / batch
		killAt := 1 + rng.IntN(max(batches, 1))
		chunk := 1 + rng.IntN(4)
		if crash(t, bundle, rng, step, killAt, batch, chunk) {
			kills++
			byStep[step]++
		}

		// Rows whose job is in Redis although the row is pending: the
		// crash hit the window between the two writes.
		for _, id := range pending(bundle.rows(t)) {
			state, err := bundle.queue(t, rowQueue[id]).GetJobState(ctx, outboxJobID(id))
			require.NoError(t, err)
			if state != drover.StateUnknown {
				orphans++
			}
		}
	}

	// A relay that lives relays the rest. On PostgreSQL a killed relay's
	// rows are locked until its backend notices the dead connection, so
	// flush until nothing is pending.
	final := bundle.newRelay(t, nil)
	var finalStats outbox.Stats
	testkit.WaitFor(t, 30*time.Second, "every row sent", func() bool {
		stats, err := final.Flush(ctx)
		require.NoError(t, err)
		finalStats.Created += stats.Created
		finalStats.Duplicates += stats.Duplicates
		return len(pending(bundle.rows(t))) == 0
	})

	rows := bundle.rows(t)
	t.Logf("%s: %d relays run, %d killed %v, %d rows; %d times a pending row's job was already in Redis after a kill; final relay %+v (seed %d)",
		bundle.dialect, runs, kills, byStep, len(rows), orphans, finalStats, seed)

	perQueue := make(map[string]int64)
	for _, r := range rows {
		require.True(t, r.Sent, "row %d", r.ID)
		require.Equal(t, outboxJobID(r.ID), r.JobID)
		perQueue[r.Queue]++
		state, err := bundle.queue(t, r.Queue).GetJobState(ctx, r.JobID)
		require.NoError(t, err)
		require.NotEqual(t, drover.StateUnknown, state, "row %d has no job", r.ID)
	}
	for _, q := range queues {
		require.Equal(t, perQueue[q], bundle.jobCount(t, q), "queue %s: one job per row, no more", q)
	}
	require.Positive(t, orphans, "no crash landed between the Redis write and the row update")
}
