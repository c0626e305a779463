package outbox_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/outbox"
	"github.com/seed40057009/drover/pgmigrate"
)

// TestRelayPostgresFaults: PostgreSQL fails under a running relay while rows
// keep coming: the server restarts (crash and recovery from its WAL), it
// freezes (SIGSTOP of the postmaster and every backend: a stuck host, the
// connections open), or the relay's connections are killed
// (pg_terminate_backend) between the Redis write and the row update. Each
// time the relay must recover by itself, every committed row must become
// exactly one job (a row relayed twice is found as a duplicate of its job
// id), the failures must be logged with the relay's keys, and Close must
// return in bounded time, frozen server included.
func TestRelayPostgresFaults(t *testing.T) {
	t.Parallel()
	srv := pgtest.Own(t)
	ctx := context.Background()

	// faultRig is one database of srv with a relay over it and a
	// producer committing rows in the background until stop.
	type faultRig struct {
		pool    *pgxpool.Pool
		relay   *outbox.Relay
		logs    *logSink
		prefix  string
		stop    func() // stops the producer and waits for it
		killing atomic.Bool
	}
	newRig := func(t *testing.T, db string, hooks bool) *faultRig {
		pool := srv.Pool(t, db)
		_, err := pgmigrate.Up(ctx, pgmigrate.Postgres(pool), nil)
		require.NoError(t, err)
		rdb, prefix := redistest.Client(t)
		ob := outbox.NewPostgres(pool)
		rig := &faultRig{pool: pool, logs: &logSink{}, prefix: prefix}
		rig.relay, err = outbox.NewRelay(ob, rdb, &outbox.RelayOptions{
			QueueOptions: &drover.QueueOptions{Prefix: prefix},
			BatchSize:    10, PollInterval: 50 * time.Millisecond,
			MinRetryDelay: 10 * time.Millisecond, MaxRetryDelay: 300 * time.Millisecond,
			Logger: rig.logs.logger(),
		})
		require.NoError(t, err)
		if hooks {
			// Once armed, the relay's batch connection dies after its jobs
			// are in Redis, before its rows are marked.
			outbox.SetTestHooks(rig.relay, nil, func(ctx context.Context) error {
				if rig.killing.CompareAndSwap(true, false) {
					_, _ = pool.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
						WHERE datname = current_database() AND pid <> pg_backend_pid()`)
				}
				return nil
			}, nil)
		}
		require.NoError(t, rig.relay.Start(ctx))
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				actx, cancel := context.WithTimeout(ctx, 2*time.Second)
				tx, err := pool.Begin(actx)
				if err == nil {
					err = ob.AddTx(actx, tx, "q", fmt.Sprintf("j%d", i), nil, nil)
					if err == nil {
						err = tx.Commit(actx)
					}
					_ = tx.Rollback(actx)
				}
				cancel()
				if err != nil {
					time.Sleep(20 * time.Millisecond) // the server is down: its failure is the test's point
				}
				time.Sleep(5 * time.Millisecond)
			}
		})
		rig.stop = func() { close(done); wg.Wait() }
		t.Cleanup(func() {
			cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			require.NoError(t, rig.relay.Close(cctx))
		})
		return rig
	}
	// settle stops the producer, waits for every row to be relayed and
	// checks that each is one job of its own, and no job is extra.
	settle := func(t *testing.T, rig *faultRig) {
		rig.stop()
		var rows, sent int
		testkit.WaitFor(t, 30*time.Second, "every row relayed", func() bool {
			err := rig.pool.QueryRow(ctx, `SELECT count(*), count(sent_at) FROM drover_outbox`).Scan(&rows, &sent)
			return err == nil && rows == sent
		})
		require.Greater(t, rows, 20, "rows committed")
		var distinct int
		testkit.WaitFor(t, 10*time.Second, "a read of the job ids", func() bool { // past killed pooled connections, as above
			return rig.pool.QueryRow(ctx, `SELECT count(DISTINCT job_id) FROM drover_outbox WHERE job_id = 'outbox-' || id`).Scan(&distinct) == nil
		})
		require.Equal(t, rows, distinct, "each row names its own job")
		rdb, _ := redistest.Client(t)
		q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: rig.prefix})
		require.NoError(t, err)
		counts, err := q.GetJobCounts(ctx)
		require.NoError(t, err)
		var jobs int64
		for _, n := range counts {
			jobs += n
		}
		require.EqualValues(t, rows, jobs, "one job per row")
	}
	// progressed waits until n more rows are sent.
	progressed := func(t *testing.T, rig *faultRig, n int) {
		// The kills may have ended the test's own pooled connections too:
		// the first read on one fails (57P01), the pool then dials anew.
		var before int
		testkit.WaitFor(t, 10*time.Second, "a read of the sent rows", func() bool {
			return rig.pool.QueryRow(ctx, `SELECT count(sent_at) FROM drover_outbox`).Scan(&before) == nil
		})
		testkit.WaitFor(t, 30*time.Second, "rows relayed", func() bool {
			var now int
			err := rig.pool.QueryRow(ctx, `SELECT count(sent_at) FROM drover_outbox`).Scan(&now)
			return err == nil && now >= before+n
		})
	}

	t.Run("TerminatedConnections", func(t *testing.T) {
		rig := newRig(t, "terminated", true)
		progressed(t, rig, 20)
		for range 3 {
			rig.killing.Store(true)
			testkit.WaitFor(t, 10*time.Second, "the kill", func() bool { return !rig.killing.Load() })
			progressed(t, rig, 10)
		}
		settle(t, rig)
		require.Contains(t, rig.logs.String(), `msg="outbox batch failed; retrying" attempt=1`)
		// The rows of a killed batch were relayed again: their jobs were
		// found as duplicates, not added twice.
		require.Regexp(t, `msg="outbox batch relayed" count=\d+ created=\d+ duplicates=[1-9]`, rig.logs.String())
	})

	t.Run("Frozen", func(t *testing.T) {
		rig := newRig(t, "frozen", false)
		progressed(t, rig, 20)
		require.NoError(t, srv.Signal(syscall.SIGSTOP))
		thawed := false
		thaw := func() {
			if !thawed {
				thawed = true
				require.NoError(t, srv.Signal(syscall.SIGCONT))
			}
		}
		defer thaw()
		time.Sleep(2 * time.Second) // batches in flight hang
		thaw()
		progressed(t, rig, 20) // the relay goes on by itself
		settle(t, rig)

		// Close while frozen returns in bounded time.
		require.NoError(t, srv.Signal(syscall.SIGSTOP))
		thawed = false
		time.Sleep(300 * time.Millisecond) // a poll's batch is in flight
		closed := make(chan error, 1)
		go func() {
			cctx, cancel := context.WithTimeout(ctx, time.Second)
			defer cancel()
			closed <- rig.relay.Close(cctx)
		}()
		select {
		case err := <-closed:
			require.NoError(t, err)
		case <-time.After(15 * time.Second):
			thaw()
			t.Fatal("Close did not return 15 s after its context ended while PostgreSQL was frozen")
		}
		thaw()
	})

	t.Run("Restart", func(t *testing.T) {
		rig := newRig(t, "restart", false)
		progressed(t, rig, 20)
		srv.Crash()
		time.Sleep(500 * time.Millisecond)
		require.NoError(t, srv.Start())
		progressed(t, rig, 20) // the relay goes on by itself
		settle(t, rig)
		require.True(t, strings.Contains(rig.logs.String(), "outbox batch failed; retrying") ||
			strings.Contains(rig.logs.String(), "outbox listen connection lost; reconnecting"), rig.logs.String())
	})
}

// TestRelayOutlivesAHalfOpenConnection: the relay's connections to
// PostgreSQL go half-open in the middle of a batch (its jobs are in Redis,
// its rows not yet marked): they stay open and carry nothing more, as when
// a firewall or NAT on the path forgets them, while new connections work.
// With default options the relay must give that batch up (after
// BatchTimeout, 30 s) and go on with the rows committed after it: before, the batch waited for an answer
// without any bound (in production until the operating system gave up on
// the connection, tens of minutes) and nothing more was relayed, while the
// log said nothing.
func TestRelayOutlivesAHalfOpenConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bundle := setupPostgres(t)
	proxy, pool := pgtest.ConnectThroughProxy(t, bundle.dsn)
	ob := outbox.NewPostgres(pool)
	logs := &logSink{}
	relay := relayWithPrefix(t, bundle.prefix, func(o *outbox.RelayOptions) (*outbox.Relay, error) {
		o.PollInterval = 100 * time.Millisecond
		o.Logger = logs.logger()
		return outbox.NewRelay(ob, bundle.rdb, o)
	}, nil)
	var armed atomic.Bool
	armed.Store(true)
	outbox.SetTestHooks(relay, nil, func(context.Context) error {
		if armed.CompareAndSwap(true, false) {
			proxy.Strand() // the batch's mark and commit go nowhere
		}
		return nil
	}, nil)
	bundle.add(t, job{queue: "q", name: "stranded"})
	require.NoError(t, relay.Start(ctx))
	testkit.WaitFor(t, 10*time.Second, "the batch's connection to go half-open", func() bool { return !armed.Load() })

	bundle.add(t, job{queue: "q", name: "after"})
	testkit.WaitFor(t, time.Minute, "the row committed after the fault relayed", func() bool {
		rows := bundle.rows(t)
		return len(rows) == 2 && rows[1].Sent
	})
	require.Contains(t, logs.String(), `msg="outbox batch failed; retrying" attempt=1`)
	require.Contains(t, logs.String(), "(the batch ran out of RelayOptions.BatchTimeout, 30s; retrying)")
	// PostgreSQL ended the half-open session, which still locked the
	// stranded row, once it had been idle in its transaction for as long:
	// the row was relayed again, as its job's duplicate.
	testkit.WaitFor(t, time.Minute, "the stranded row relayed", func() bool {
		return len(pending(bundle.rows(t))) == 0
	})
	require.EqualValues(t, 2, bundle.jobCount(t, "q"))
	require.Regexp(t, `msg="outbox batch relayed" count=\d+ created=\d+ duplicates=1`, logs.String())
}

// TestRelayListenOutlivesAHalfOpenConnection: the relay's connections to
// PostgreSQL go half-open while it idles (they stay open and carry nothing
// more; new connections work), its LISTEN connection among them. With a
// long PollInterval, notifications are how rows get relayed: the relay
// must find out that its LISTEN connection is dead and listen again, so a
// row committed after the fault is relayed long before the poll. Before,
// it waited on the dead connection for good (in production until the
// operating system's TCP keepalive, tens of minutes), every row waiting for
// the next poll, and nothing was logged.
func TestRelayListenOutlivesAHalfOpenConnection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bundle := setupPostgres(t)
	proxy, pool := pgtest.ConnectThroughProxy(t, bundle.dsn)
	ob := outbox.NewPostgres(pool)
	logs := &logSink{}
	relay := relayWithPrefix(t, bundle.prefix, func(o *outbox.RelayOptions) (*outbox.Relay, error) {
		o.PollInterval = time.Hour
		o.Logger = logs.logger()
		return outbox.NewRelay(ob, bundle.rdb, o)
	}, nil)
	require.NoError(t, relay.Start(ctx))
	bundle.add(t, job{queue: "q", name: "before"})
	testkit.WaitFor(t, 10*time.Second, "the row before the fault relayed", func() bool {
		return len(pending(bundle.rows(t))) == 0
	})

	proxy.Strand()
	bundle.add(t, job{queue: "q", name: "after"})
	testkit.WaitFor(t, 90*time.Second, "the row after the fault relayed", func() bool {
		return len(pending(bundle.rows(t))) == 0
	})
	// A batch already under way when the connections went half-open
	// retries on a new connection once BatchTimeout (30 s) runs out, and
	// may relay the row before the listener's check (30 s of silence, then
	// a ping of up to 10 s) has logged: wait for the log line too.
	testkit.WaitFor(t, 60*time.Second, "the dead LISTEN connection logged", func() bool {
		return strings.Contains(logs.String(), `msg="outbox listen connection lost; reconnecting" attempt=1`)
	})
	require.Contains(t, logs.String(), "listen connection silent for 30s did not answer a ping")
	require.EqualValues(t, 2, bundle.jobCount(t, "q"))
}

// TestRelayPostgresBatchTimeoutOverTheIdleLimit: a BatchTimeout longer
// than PostgreSQL's largest idle_in_transaction_session_timeout (2^31-1 ms,
// about 24.8 days), say a month to bound batches loosely. Before, the
// claim set the idle limit to the BatchTimeout as it was, PostgreSQL
// refused the value (SQLSTATE 22023), and every batch failed: no row was
// ever relayed.
func TestRelayPostgresBatchTimeoutOverTheIdleLimit(t *testing.T) {
	t.Parallel()
	bundle := setupPostgres(t)
	bundle.add(t, job{queue: "q", name: "n"})
	relay := bundle.newRelay(t, &outbox.RelayOptions{BatchTimeout: 30 * 24 * time.Hour})
	stats, err := relay.Flush(context.Background())
	require.NoError(t, err)
	require.Equal(t, outbox.Stats{Created: 1}, stats)
}

// TestRelayBatchCommitAnswerLost: the answer to a batch's COMMIT is lost
// (the connection resets right after PostgreSQL ran it). The relay reads
// the batch's marks back: the commit landed, so Flush must succeed and
// count the batch's jobs, and every row must still be one job. Before,
// Flush failed with the commit "in doubt" and counted nothing, and no
// later Flush ever counted those jobs (their rows were marked sent):
// Created 0 for five new jobs.
func TestRelayBatchCommitAnswerLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bundle, proxy, relay := proxiedRelay(t, 5, nil)

	proxy.DropReplyTo("commit\x00") // pgx's simple-protocol COMMIT, not "read committed"
	stats, err := relay.Flush(ctx)
	require.Equal(t, int64(1), proxy.Dropped(), "the commit's answer was lost")
	require.NoError(t, err, "the commit landed")
	require.Equal(t, outbox.Stats{Created: 5}, stats)
	require.Empty(t, pending(bundle.rows(t)))

	stats, err = relay.Flush(ctx)
	require.NoError(t, err)
	require.Zero(t, stats, "nothing left to relay")
	require.EqualValues(t, 5, bundle.jobCount(t, "q"))
}

// TestRelayBatchCommitAnswerLostWithTheDatabase: the answer to a batch's
// COMMIT is lost and the database stays unreachable (the proxy refuses new
// connections), so the relay cannot read the marks back. Flush must say
// the rows may be marked or not, and its Stats must count the batch's
// five new jobs, which are in Redis either way; once the database is back,
// the next Flush finds nothing pending and makes no job twice. Before, the
// failed Flush counted nothing (Created 0), and no later one counted them.
func TestRelayBatchCommitAnswerLostWithTheDatabase(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bundle, proxy, relay := proxiedRelay(t, 5, nil)

	proxy.DropReplyAndRefuse("commit\x00")
	stats, err := relay.Flush(ctx)
	require.Equal(t, int64(1), proxy.Dropped(), "the commit's answer was lost")
	require.ErrorContains(t, err, "may be marked sent or not")
	require.ErrorContains(t, err, "reading the marks back failed too")
	require.Equal(t, outbox.Stats{Created: 5}, stats, "the batch's jobs are in Redis")

	require.NoError(t, proxy.Listen())
	stats, err = relay.Flush(ctx)
	require.NoError(t, err)
	require.Zero(t, stats.Created, "no job made twice")
	require.Empty(t, pending(bundle.rows(t)))
	require.EqualValues(t, 5, bundle.jobCount(t, "q"))
}

// TestRelayBatchCommitLostOnTheWay: a batch's COMMIT is held by the
// network (a partition that starts as it is sent); the batch runs out of
// BatchTimeout waiting for its answer, and the server, idle in the
// transaction as long, ends the session, which rolls the marks back. Once
// the network is back the relay reads the marks back: they did not land,
// so the error must say so (not "in doubt"), and the next Flush relays
// the rows again as duplicates of their jobs: one job per row.
func TestRelayBatchCommitLostOnTheWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bundle, proxy, relay := proxiedRelay(t, 3, &outbox.RelayOptions{BatchTimeout: 2 * time.Second}) // room for a slow machine before the COMMIT

	proxy.BlackholeAt("commit\x00")
	healed := make(chan struct{})
	go func() {
		// The partition outlasts the batch's bound, and so the server's
		// idle limit, and ends within the read-back's (5 s).
		defer close(healed)
		for start := time.Now(); !proxy.Blackholed() && time.Since(start) < 10*time.Second; {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(3500 * time.Millisecond)
		proxy.SetBlackhole(false)
	}()
	stats, err := relay.Flush(ctx)
	<-healed
	require.ErrorContains(t, err, "the marks did not land")
	require.NotContains(t, err.Error(), "may be marked sent or not")
	require.Zero(t, stats)
	require.Len(t, pending(bundle.rows(t)), 3)

	stats, err = relay.Flush(ctx)
	require.NoError(t, err)
	require.Equal(t, outbox.Stats{Duplicates: 3}, stats)
	require.Empty(t, pending(bundle.rows(t)))
	require.EqualValues(t, 3, bundle.jobCount(t, "q"))
}

// proxiedRelay is a Postgres bundle with n pending rows (queue "q", name
// "n", data 0..n-1) and a relay (opts, nil for the defaults) whose pool
// reaches the database through a fault proxy of its own.
func proxiedRelay(t *testing.T, n int, opts *outbox.RelayOptions) (*testBundle, *faultproxy.Proxy, *outbox.Relay) {
	t.Helper()
	bundle := setupPostgres(t)
	for i := range n {
		bundle.add(t, job{queue: "q", name: "n", data: i})
	}
	proxy, pool := pgtest.ConnectThroughProxy(t, bundle.dsn)
	relay := relayWithPrefix(t, bundle.prefix, func(o *outbox.RelayOptions) (*outbox.Relay, error) {
		return outbox.NewRelay(outbox.NewPostgres(pool), bundle.rdb, o)
	}, opts)
	return bundle, proxy, relay
}
