package outbox_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/outbox"
)

func TestRelay(t *testing.T) {
	t.Parallel()

	for _, dialect := range dialects {
		t.Run(dialect.name, func(t *testing.T) {
			t.Parallel()
			exerciseRelay(t, dialect.setup)
		})
	}
}

func exerciseRelay(t *testing.T, setup func(t *testing.T) *testBundle) {
	ctx := context.Background()

	t.Run("ACommittedRowBecomesAJobWithItsDataAndOptions", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		bundle.add(t, job{
			queue: "emails", name: "welcome", data: map[string]any{"user": 7},
			opts: &drover.JobOptions{Attempts: 3, Priority: 5, Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: time.Second}},
		})
		relay := bundle.newRelay(t, nil)

		stats, err := relay.Flush(ctx)
		require.NoError(t, err)
		require.Equal(t, outbox.Stats{Created: 1}, stats)

		rows := bundle.rows(t)
		require.Len(t, rows, 1)
		require.True(t, rows[0].Sent)
		require.Equal(t, outboxJobID(rows[0].ID), rows[0].JobID)

		j, err := bundle.queue(t, "emails").GetJob(ctx, rows[0].JobID)
		require.NoError(t, err)
		require.Equal(t, "welcome", j.Name)
		require.JSONEq(t, `{"user":7}`, string(j.Data))
		require.Equal(t, 3, j.Opts.Attempts)
		require.Equal(t, 5, j.Priority)
		require.Equal(t, &drover.Backoff{Type: drover.BackoffFixed, Delay: time.Second}, j.Opts.Backoff)

		stats, err = relay.Flush(ctx)
		require.NoError(t, err)
		require.Equal(t, outbox.Stats{}, stats, "a sent row is not relayed again")
	})

	t.Run("ARolledBackRowNeverBecomesAJob", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		bundle.addRolledBack(t, job{queue: "emails", name: "welcome"})
		stats, err := bundle.newRelay(t, nil).Flush(ctx)
		require.NoError(t, err)
		require.Equal(t, outbox.Stats{}, stats)
		require.Zero(t, bundle.jobCount(t, "emails"))
	})

	// Issue 15 item 1: the relay's add loses its reply and go-redis sends
	// it again; the resend answers what the first run stored (created),
	// and each row is one job. Without the add's call token the resend
	// found the jobs and the relay counted them as duplicates.
	t.Run("ALostReplyIsResentAndStoredOnce", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		proxy, err := faultproxy.Start(redistest.Shared(t).Addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = proxy.Close() })
		rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr, MaxRetries: 3})
		t.Cleanup(func() { _ = rdb.Close() })
		warm, err := drover.NewQueue(rdb, "warm", &drover.QueueOptions{Prefix: bundle.prefix})
		require.NoError(t, err)
		_, err = warm.Add(ctx, "warm-up", nil, nil) // caches the add script
		require.NoError(t, err)

		bundle.add(t, job{queue: "q", name: "a"}, job{queue: "q", name: "b"}, job{queue: "q", name: "c"})
		proxy.DropReplyTo("evalsha")
		logs := &logSink{}
		stats, err := bundle.relay(t, rdb, &outbox.RelayOptions{Logger: logs.logger()}).Flush(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(1), proxy.Dropped())
		// The queue's warning goes to the relay's logger (it went to
		// drover's default logger on stderr).
		require.Contains(t, logs.String(), `level=WARN msg="add call failed; sending it again (it is stored once)"`)
		require.Equal(t, outbox.Stats{Created: 3}, stats)
		require.Empty(t, pending(bundle.rows(t)))
		require.EqualValues(t, 3, bundle.jobCount(t, "q"))
	})

	t.Run("AReAddAfterACrashBetweenAddAndMarkIsADuplicate", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		bundle.add(t, job{queue: "q", name: "a"}, job{queue: "q", name: "b"})
		crashed := bundle.newRelay(t, nil)
		crash := errors.New("relay died after the add")
		outbox.SetTestHooks(crashed, nil, func(context.Context) error { return crash }, nil)
		_, err := crashed.Flush(ctx)
		require.ErrorIs(t, err, crash)
		require.Len(t, pending(bundle.rows(t)), 2, "the rows stay pending")
		require.EqualValues(t, 2, bundle.jobCount(t, "q"), "but their jobs were added")

		stats, err := bundle.newRelay(t, nil).Flush(ctx)
		require.NoError(t, err)
		require.Equal(t, outbox.Stats{Duplicates: 2}, stats)
		require.Empty(t, pending(bundle.rows(t)))
		require.EqualValues(t, 2, bundle.jobCount(t, "q"))
	})

	t.Run("ACrashAfterMarkingBeforeCommitIsADuplicateToo", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		bundle.add(t, job{queue: "q", name: "a"})
		crashed := bundle.newRelay(t, nil)
		crash := errors.New("relay died before commit")
		outbox.SetTestHooks(crashed, nil, nil, func(context.Context) error { return crash })
		_, err := crashed.Flush(ctx)
		require.ErrorIs(t, err, crash)
		require.Len(t, pending(bundle.rows(t)), 1)

		stats, err := bundle.newRelay(t, nil).Flush(ctx)
		require.NoError(t, err)
		require.Equal(t, outbox.Stats{Duplicates: 1}, stats)
		require.EqualValues(t, 1, bundle.jobCount(t, "q"))
	})

	t.Run("ARowKeepsItsOwnJobID", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		bundle.add(t,
			job{queue: "orders", name: "ship", opts: &drover.JobOptions{JobID: "order-42"}},
			job{queue: "orders", name: "ship", opts: &drover.JobOptions{JobID: "order-42"}},
		)
		stats, err := bundle.newRelay(t, nil).Flush(ctx)
		require.NoError(t, err)
		require.Equal(t, outbox.Stats{Created: 1, Duplicates: 1}, stats)
		for _, r := range bundle.rows(t) {
			require.Equal(t, "order-42", r.JobID)
		}
		require.EqualValues(t, 1, bundle.jobCount(t, "orders"))
	})

	t.Run("ARowReAddedOverAStaleDeduplicationKeyCountsAsCreated", func(t *testing.T) {
		t.Parallel()

		// The row's Deduplication ID is held by a job whose hash is gone
		// (removed behind drover's back): the add stores a new job
		// (AddReAdded). Before, the relay counted it nowhere: Stats{} and
		// "count=0" for a batch that created a job.
		bundle := setup(t)
		dedup := &drover.Deduplication{ID: "welcome-7"}
		first, err := bundle.queue(t, "q").Add(ctx, "old", nil, &drover.JobOptions{Deduplication: dedup})
		require.NoError(t, err)
		require.NoError(t, bundle.rdb.Del(ctx, bundle.prefix+":q:"+first.Job.ID).Err())
		bundle.add(t, job{queue: "q", name: "new", opts: &drover.JobOptions{Deduplication: dedup}})

		logs := &logSink{}
		stats, err := bundle.newRelay(t, &outbox.RelayOptions{Logger: logs.logger()}).Flush(ctx)
		require.NoError(t, err)
		require.Equal(t, outbox.Stats{Created: 1}, stats)
		require.Contains(t, logs.String(), `msg="outbox batch relayed" count=1 created=1 duplicates=0`)
		_, err = bundle.queue(t, "q").GetJob(ctx, outboxJobID(bundle.rows(t)[0].ID))
		require.NoError(t, err, "the row's job exists")
	})

	t.Run("AddTxRefusesBadInputBeforeWriting", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		tests := []struct {
			name    string
			j       job
			wantIs  error
			wantMsg string
		}{
			{"QueueNameWithColon", job{queue: "a:b", name: "n"}, drover.ErrInvalidOption, `queue name "a:b" must not contain ':'`},
			{"EmptyQueueName", job{queue: "", name: "n"}, drover.ErrInvalidOption, "queue name must not be empty"},
			{"IntegerJobID", job{queue: "q", name: "n", opts: &drover.JobOptions{JobID: "123"}}, drover.ErrInvalidJobID, `job id "123" must not be an integer`},
			{"JobIDWithColon", job{queue: "q", name: "n", opts: &drover.JobOptions{JobID: "a:b"}}, drover.ErrInvalidJobID, `job id "a:b" must not contain ':'`},
			{"UnencodableData", job{queue: "q", name: "n", data: func() {}}, drover.ErrInvalidData, "unsupported type"},
			// Options every queue refuses: they used to be written, and the
			// row failed later, at relay time, far from the caller.
			{"NegativeDelay", job{queue: "q", name: "n", opts: &drover.JobOptions{Delay: -time.Second}}, drover.ErrInvalidOption, "JobOptions.Delay must not be negative, got -1s"},
			{"NegativeAttempts", job{queue: "q", name: "n", opts: &drover.JobOptions{Attempts: -1}}, drover.ErrInvalidOption, "JobOptions.Attempts must not be negative, got -1"},
			{"PriorityTooHigh", job{queue: "q", name: "n", opts: &drover.JobOptions{Priority: 1 << 30}}, drover.ErrInvalidOption, "JobOptions.Priority must be between 0 and 2097151"},
			// Data over the job's own SizeLimit: every queue refuses it.
			{"DataOverSizeLimit", job{queue: "q", name: "n", data: map[string]string{"k": "0123456789"}, opts: &drover.JobOptions{SizeLimit: 10}},
				drover.ErrInvalidData, "data is 18 bytes, over SizeLimit 10"},
		}
		for _, tt := range tests {
			err := bundle.addErr(t, tt.j)
			require.ErrorIs(t, err, tt.wantIs, tt.name)
			require.ErrorContains(t, err, tt.wantMsg, tt.name)
			require.ErrorContains(t, err, "outbox: add job", tt.name)
		}
		require.Empty(t, bundle.rows(t))
	})

	t.Run("ARowTheQueueRefusesIsMarkedFailedAndTheOthersGoOn", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		bundle.add(t,
			job{queue: "q", name: "fine-1"},
			job{queue: "q", name: "bad", opts: &drover.JobOptions{Backoff: &drover.Backoff{Type: "smtp"}}},
			job{queue: "q", name: "fine-2"},
		)
		logs := &logSink{}
		stats, err := bundle.newRelay(t, &outbox.RelayOptions{Logger: logs.logger()}).Flush(ctx)
		require.NoError(t, err)
		require.Equal(t, outbox.Stats{Created: 2, Failed: 1}, stats)

		rows := bundle.rows(t)
		require.True(t, rows[0].Sent)
		require.True(t, rows[1].Failed)
		require.False(t, rows[1].Sent)
		require.Contains(t, rows[1].LastError, `unknown JobOptions.Backoff.Type "smtp"`)
		require.True(t, rows[2].Sent)
		require.EqualValues(t, 2, bundle.jobCount(t, "q"))
		require.Contains(t, logs.String(), `level=ERROR msg="outbox row refused by its queue; marked failed" outbox_id=2 queue=q job_id=outbox-2`)

		stats, err = bundle.newRelay(t, nil).Flush(ctx)
		require.NoError(t, err)
		require.Equal(t, outbox.Stats{}, stats, "a failed row is not retried")
	})

	t.Run("ARowRedisRefusesIsMarkedFailedAndTheOthersGoOn", func(t *testing.T) {
		t.Parallel()

		// Queue "broken" has its meta hash stored as a string (another
		// program wrote the key): Redis answers WRONGTYPE to every add to
		// it, before the add writes anything. Before, the whole batch
		// failed and was retried for ever, queue "fine"'s rows included.
		bundle := setup(t)
		require.NoError(t, bundle.rdb.Set(ctx, bundle.prefix+":broken:meta", "x", 0).Err())
		bundle.add(t,
			job{queue: "broken", name: "a"},
			job{queue: "fine", name: "b"},
			job{queue: "broken", name: "c"},
		)
		logs := &logSink{}
		stats, err := bundle.newRelay(t, &outbox.RelayOptions{Logger: logs.logger()}).Flush(ctx)
		require.NoError(t, err)
		require.Equal(t, outbox.Stats{Created: 1, Failed: 2}, stats)

		rows := bundle.rows(t)
		require.True(t, rows[0].Failed)
		require.Contains(t, rows[0].LastError, "WRONGTYPE")
		require.True(t, rows[1].Sent)
		require.True(t, rows[2].Failed)
		require.EqualValues(t, 1, bundle.jobCount(t, "fine"))
		require.Contains(t, logs.String(), `msg="outbox row refused by its queue; marked failed" outbox_id=1 queue=broken`)
	})

	t.Run("ADeduplicatedRowRecordsTheJobThatOwnsItsID", func(t *testing.T) {
		t.Parallel()

		// Before, the row recorded job_id "outbox-1", a job that never
		// existed: the add was swallowed by the owner's deduplication id.
		bundle := setup(t)
		dedup := &drover.Deduplication{ID: "welcome-7"}
		owner, err := bundle.queue(t, "q").Add(ctx, "first", nil, &drover.JobOptions{Deduplication: dedup})
		require.NoError(t, err)
		bundle.add(t, job{queue: "q", name: "again", opts: &drover.JobOptions{Deduplication: dedup}})

		stats, err := bundle.newRelay(t, nil).Flush(ctx)
		require.NoError(t, err)
		require.Equal(t, outbox.Stats{Deduplicated: 1}, stats)
		rows := bundle.rows(t)
		require.True(t, rows[0].Sent)
		require.Equal(t, owner.Job.ID, rows[0].JobID)
	})

	t.Run("FlushRelaysEveryBatchAcrossQueues", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		var jobs []job
		for i := range 250 {
			jobs = append(jobs, job{queue: []string{"a", "b", "c"}[i%3], name: "n", data: map[string]int{"i": i}})
		}
		bundle.add(t, jobs...)
		stats, err := bundle.newRelay(t, &outbox.RelayOptions{BatchSize: 40}).Flush(ctx)
		require.NoError(t, err)
		require.Equal(t, outbox.Stats{Created: 250}, stats)
		require.EqualValues(t, 84, bundle.jobCount(t, "a"))
		require.EqualValues(t, 83, bundle.jobCount(t, "b"))
		require.EqualValues(t, 83, bundle.jobCount(t, "c"))
		require.Empty(t, pending(bundle.rows(t)))
	})

	t.Run("TwoRelaysMakeOneJobPerRow", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		var jobs []job
		for range 300 {
			jobs = append(jobs, job{queue: "q", name: "n"})
		}
		bundle.add(t, jobs...)
		relays := []*outbox.Relay{
			bundle.newRelay(t, &outbox.RelayOptions{BatchSize: 7}),
			bundle.newRelay(t, &outbox.RelayOptions{BatchSize: 11}),
		}
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			total outbox.Stats
		)
		for _, r := range relays {
			wg.Go(func() {
				stats, err := r.Flush(ctx)
				require.NoError(t, err)
				mu.Lock()
				defer mu.Unlock()
				total.Created += stats.Created
				total.Duplicates += stats.Duplicates
			})
		}
		wg.Wait()
		require.Equal(t, 300, total.Created, "each row created once (duplicates: %d)", total.Duplicates)
		require.EqualValues(t, 300, bundle.jobCount(t, "q"))
		require.Empty(t, pending(bundle.rows(t)))
	})

	t.Run("PruneDeletesOnlyOldSentRows", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		bundle.add(t, job{queue: "q", name: "sent"}, job{queue: "q", name: "refused", opts: &drover.JobOptions{Backoff: &drover.Backoff{Type: "smtp"}}})
		_, err := bundle.newRelay(t, nil).Flush(ctx)
		require.NoError(t, err)
		bundle.add(t, job{queue: "q", name: "pending"})

		n, err := bundle.prune(ctx, time.Now().Add(-time.Hour))
		require.NoError(t, err)
		require.Zero(t, n)
		n, err = bundle.prune(ctx, time.Now().Add(time.Minute))
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		rows := bundle.rows(t)
		require.Len(t, rows, 2)
		require.True(t, rows[0].Failed)
		require.False(t, rows[1].Sent)
	})

	t.Run("StartRelaysRowsInTheBackground", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		bundle.add(t, job{queue: "q", name: "before-start"})
		relay := bundle.newRelay(t, &outbox.RelayOptions{PollInterval: 20 * time.Millisecond})
		require.NoError(t, relay.Start(ctx))
		bundle.add(t, job{queue: "q", name: "after-start"})
		testkit.WaitFor(t, 10*time.Second, "both rows relayed", func() bool { return len(pending(bundle.rows(t))) == 0 })
		require.EqualValues(t, 2, bundle.jobCount(t, "q"))
	})

	t.Run("RedisDownIsRetriedWithGrowingDelaysUntilItIsBack", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		proxy := startProxy(t, redistest.Shared(t).Addr)
		proxy.setDown(true)
		rdb := redis.NewClient(&redis.Options{Addr: proxy.addr(), MaxRetries: -1, DialTimeout: time.Second})
		t.Cleanup(func() { _ = rdb.Close() })

		logs := &logSink{}
		relay := bundle.relay(t, rdb, &outbox.RelayOptions{
			PollInterval:  20 * time.Millisecond,
			MinRetryDelay: 20 * time.Millisecond,
			MaxRetryDelay: 80 * time.Millisecond,
			Logger:        logs.logger(),
		})

		bundle.add(t, job{queue: "q", name: "a"}, job{queue: "q", name: "b"})
		require.NoError(t, relay.Start(ctx), "Start does not need Redis")
		testkit.WaitFor(t, 10*time.Second, "four failed batches", func() bool { return len(logs.delays()) >= 4 })
		require.Len(t, pending(bundle.rows(t)), 2, "nothing is dropped while Redis is down")

		delays := logs.delays()
		require.Less(t, delays[0], delays[1], "the delay grows")
		require.LessOrEqual(t, delays[3], 80*time.Millisecond, "up to MaxRetryDelay")

		proxy.setDown(false)
		testkit.WaitFor(t, 10*time.Second, "rows relayed once Redis is back", func() bool { return len(pending(bundle.rows(t))) == 0 })
		require.EqualValues(t, 2, bundle.jobCount(t, "q"))
	})

	t.Run("FlushEndsWithItsContextWhileTheBackgroundBatchIsStuck", func(t *testing.T) {
		t.Parallel()

		// Redis stops answering (a partition) while a started relay's
		// background batch is adding a row: that batch waits for it. A
		// Flush of the same relay with a 1 s deadline must return by it.
		// Before, Flush waited on the relay's flush mutex for as long as
		// the partition lasted (10 s here).
		bundle := setup(t)
		proxy, err := faultproxy.Start(redistest.Shared(t).Addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = proxy.Close() })
		rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr})
		t.Cleanup(func() { _ = rdb.Close() })
		relay := bundle.relay(t, rdb, &outbox.RelayOptions{PollInterval: 20 * time.Millisecond,
			QueueOptions: &drover.QueueOptions{Prefix: bundle.prefix, Logger: slog.New(slog.DiscardHandler)}})
		require.NoError(t, relay.Start(ctx))
		proxy.SetBlackhole(true)
		bundle.add(t, job{queue: "q", name: "a"})
		time.Sleep(300 * time.Millisecond) // the background batch is waiting for Redis

		deadline, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		done := make(chan error, 1)
		go func() { _, err := relay.Flush(deadline); done <- err }()
		select {
		case err := <-done:
			require.ErrorIs(t, err, context.DeadlineExceeded)
		case <-time.After(10 * time.Second):
			proxy.SetBlackhole(false)
			err := <-done
			t.Fatalf("Flush did not return 10 s after its context ended (then: %v)", err)
		}
		proxy.SetBlackhole(false)
		testkit.WaitFor(t, 10*time.Second, "the row relayed once Redis is back", func() bool { return len(pending(bundle.rows(t))) == 0 })
		require.EqualValues(t, 1, bundle.jobCount(t, "q"))
	})

	t.Run("CloseReturnsWhileRedisDoesNotAnswerAClientWithoutTimeouts", func(t *testing.T) {
		t.Parallel()

		// The network to Redis stops carrying anything (a partition, a
		// paused server) while a batch's add is on its way, and the
		// client has its timeouts off (ReadTimeout -1: go-redis waits for
		// an answer as long as it takes). Close with a deadline must
		// return by it, the row left pending; once Redis answers, the row
		// becomes one job. Before, Close waited for the add, which only the
		// end of the partition could end.
		bundle := setup(t)
		proxy, err := faultproxy.Start(redistest.Shared(t).Addr)
		require.NoError(t, err)
		t.Cleanup(func() { _ = proxy.Close() })
		rdb := redis.NewClient(&redis.Options{Addr: proxy.Addr, ReadTimeout: -1, WriteTimeout: -1})
		t.Cleanup(func() { _ = rdb.Close() })
		relay := bundle.relay(t, rdb, &outbox.RelayOptions{PollInterval: 20 * time.Millisecond,
			QueueOptions: &drover.QueueOptions{Prefix: bundle.prefix, Logger: slog.New(slog.DiscardHandler)}})
		proxy.BlackholeAt("evalsha")
		require.NoError(t, relay.Start(ctx))
		bundle.add(t, job{queue: "q", name: "a"})
		testkit.WaitFor(t, 10*time.Second, "the add held by the partition", proxy.Blackholed)

		closed := make(chan error, 1)
		go func() {
			cctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
			defer cancel()
			closed <- relay.Close(cctx)
		}()
		select {
		case err := <-closed:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			proxy.SetBlackhole(false)
			t.Logf("Close, once the network carried again: %v", <-closed)
			t.Fatal("Close did not return 10 s after its context ended while Redis did not answer")
		}
		require.Len(t, pending(bundle.rows(t)), 1, "the row is pending")

		proxy.SetBlackhole(false)
		_, err = bundle.newRelay(t, nil).Flush(ctx)
		require.NoError(t, err)
		require.Empty(t, pending(bundle.rows(t)))
		// The abandoned add reaches Redis too, before or after the new
		// relay's: one job all the same.
		testkit.WaitFor(t, 10*time.Second, "the abandoned add to land", func() bool {
			return bundle.rdb.Exists(ctx, bundle.prefix+":q:outbox-1").Val() == 1
		})
		require.EqualValues(t, 1, bundle.jobCount(t, "q"))
	})

	t.Run("Lifecycle", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)

		t.Run("CloseWithoutStart", func(t *testing.T) {
			relay := bundle.newRelay(t, nil)
			require.NoError(t, relay.Close(ctx))
			require.NoError(t, relay.Close(ctx))
			require.ErrorIs(t, relay.Start(ctx), drover.ErrClosed)
		})

		t.Run("StartTwiceAndCloseTwice", func(t *testing.T) {
			relay := bundle.newRelay(t, nil)
			require.NoError(t, relay.Start(ctx))
			require.NoError(t, relay.Start(ctx))
			require.NoError(t, relay.Close(ctx))
			require.NoError(t, relay.Close(ctx))
		})

		t.Run("ConcurrentStartAndClose", func(t *testing.T) {
			for range 20 {
				relay := bundle.newRelay(t, &outbox.RelayOptions{PollInterval: time.Millisecond})
				var wg sync.WaitGroup
				for i := range 8 {
					wg.Go(func() {
						if i%2 == 0 {
							if err := relay.Start(ctx); err != nil {
								require.ErrorIs(t, err, drover.ErrClosed)
							}
						} else {
							require.NoError(t, relay.Close(ctx))
						}
					})
				}
				wg.Wait()
				require.NoError(t, relay.Close(ctx))
			}
		})

		t.Run("CloseCancelsABatchStuckPastItsDeadline", func(t *testing.T) {
			bundle := setup(t)
			bundle.add(t, job{queue: "q", name: "a"})
			relay := bundle.newRelay(t, nil)
			entered := make(chan struct{})
			// A batch that only ends when its context does, like a call to
			// an unresponsive Redis.
			outbox.SetTestHooks(relay, func(ctx context.Context) error {
				close(entered)
				<-ctx.Done()
				return ctx.Err()
			}, nil, nil)
			require.NoError(t, relay.Start(ctx))
			<-entered

			deadline, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
			defer cancel()
			require.NoError(t, relay.Close(deadline))
			require.Len(t, pending(bundle.rows(t)), 1)
		})
	})
}

func TestRelayOptions(t *testing.T) {
	t.Parallel()

	rdb := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	t.Cleanup(func() { _ = rdb.Close() })
	ob := outbox.NewSQLite(nil)

	tests := []struct {
		name    string
		opts    *outbox.RelayOptions
		wantErr string
	}{
		{"NilIsDefaults", nil, ""},
		{"NegativeBatchSize", &outbox.RelayOptions{BatchSize: -1}, "RelayOptions.BatchSize must be at least 1, got -1"},
		{"NegativePollInterval", &outbox.RelayOptions{PollInterval: -time.Second}, "RelayOptions.PollInterval must not be negative, got -1s"},
		{"MaxBelowMin", &outbox.RelayOptions{MinRetryDelay: time.Second, MaxRetryDelay: time.Millisecond},
			"RelayOptions.MaxRetryDelay must be at least MinRetryDelay (1s), got 1ms"},
		{"NegativeBatchTimeout", &outbox.RelayOptions{BatchTimeout: -time.Second}, "RelayOptions.BatchTimeout must not be negative, got -1s"},
		{"PrefixMakingIntegerIDs", &outbox.RelayOptions{JobIDPrefix: "-"}, `RelayOptions.JobIDPrefix "-" does not make valid job ids`},
		{"PrefixWithColon", &outbox.RelayOptions{JobIDPrefix: "a:"}, `RelayOptions.JobIDPrefix "a:" does not make valid job ids`},
		// QueueOptions every queue refuses: they used to be accepted here,
		// and then every row relayed was marked failed for good.
		{"BadQueueOptions", &outbox.RelayOptions{QueueOptions: &drover.QueueOptions{AddBulkChunk: -1}},
			"RelayOptions.QueueOptions: invalid option: QueueOptions.AddBulkChunk must be at least 1, got -1"},
		{"BadDefaultJobOptions", &outbox.RelayOptions{QueueOptions: &drover.QueueOptions{DefaultJobOptions: &drover.JobOptions{Delay: -time.Second}}},
			"RelayOptions.QueueOptions: QueueOptions.DefaultJobOptions: invalid option: JobOptions.Delay must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()

			_, err := outbox.NewRelay(ob, rdb, tt.opts)
			if tt.wantErr == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, drover.ErrInvalidOption)
			require.ErrorContains(t, err, tt.wantErr)
		})
	}

	t.Run("NeedsAnOutboxAndAClient", func(t *testing.T) {
		t.Parallel()

		_, err := outbox.NewRelay(ob, nil, nil)
		require.EqualError(t, err, "outbox: NewRelay needs an outbox and a Redis client")
		_, err = outbox.NewRelay(ob, (*redis.Client)(nil), nil)
		require.EqualError(t, err, "outbox: NewRelay needs an outbox and a Redis client")
	})
}

// newNilRelay makes a relay over an outbox without a database: NewRelay
// does no I/O, so it accepts one.
func newNilRelay[Tx any](t *testing.T, ob *outbox.Outbox[Tx], rdb redis.UniversalClient) *outbox.Relay {
	t.Helper()
	r, err := outbox.NewRelay(ob, rdb, nil)
	require.NoError(t, err)
	return r
}

// TestNilHandlesAreErrors: a nil transaction given to AddTx, or an outbox
// made with a nil database handle, is a programming error the caller must
// see as one. Before, AddTx(ctx, nil, ...) and a relay's Start, Flush or
// Prune on NewPostgres(nil) panicked inside pgx or database/sql.
func TestNilHandlesAreErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, _ := redistest.Client(t)

	require.EqualError(t, outbox.NewPostgres(pgtest.Pool(t)).AddTx(ctx, nil, "q", "n", nil, nil),
		`outbox: add job "n" to queue "q": the transaction is nil`)
	require.EqualError(t, outbox.NewSQLite(nil).AddTx(ctx, (*sql.Tx)(nil), "q", "n", nil, nil),
		`outbox: add job "n" to queue "q": the transaction is nil`)

	noDB := "the outbox was made with a nil database handle (NewPostgres or NewSQLite)"
	pgNil, pgTypedNil, liteNil := outbox.NewPostgres(nil), outbox.NewPostgres((*pgxpool.Pool)(nil)), outbox.NewSQLite(nil)
	for _, r := range []*outbox.Relay{newNilRelay(t, pgNil, rdb), newNilRelay(t, pgTypedNil, rdb), newNilRelay(t, liteNil, rdb)} {
		require.EqualError(t, r.Start(ctx), "outbox: start relay: "+noDB)
		_, err := r.Flush(ctx)
		require.EqualError(t, err, "outbox: flush: "+noDB)
		require.NoError(t, r.Close(ctx))
	}
	for _, prune := range []func(context.Context, time.Time) (int64, error){pgNil.Prune, pgTypedNil.Prune, liteNil.Prune} {
		_, err := prune(ctx, time.Now())
		require.EqualError(t, err, "outbox: prune: "+noDB)
	}
}

func TestRelayPostgres(t *testing.T) {
	t.Parallel()

	ctx := context.Background()

	t.Run("ANotificationWakesTheRelayAtOnce", func(t *testing.T) {
		t.Parallel()

		bundle := setupPostgres(t)
		relay := bundle.newRelay(t, &outbox.RelayOptions{PollInterval: time.Hour})
		require.NoError(t, relay.Start(ctx))
		bundle.add(t, job{queue: "q", name: "a"})
		// The poll interval is an hour: only the notification can do this.
		testkit.WaitFor(t, 10*time.Second, "the row relayed", func() bool { return len(pending(bundle.rows(t))) == 0 })
	})

	t.Run("ARowInTheFirstOptsFormatIsRelayedWithItsOptions", func(t *testing.T) {
		t.Parallel()

		// A row written before the opts column took the stored opts JSON,
		// as it sits in a user's table across the upgrade, and the same
		// options added now: both jobs get the same opts in Redis.
		bundle := setupPostgres(t)
		bundle.exec(t, `INSERT INTO drover_outbox (queue, name, data, opts, created_at) VALUES ('q', 'old', '{}',
			'{"delayMs":1500,"priority":7,"lifo":true,"attempts":5,"backoff":{"type":"exponential","delayMs":2000,"jitter":0.5},`+
			`"removeOnComplete":{"count":100,"ageMs":3600000,"limit":10},"removeOnFail":{"remove":true},`+
			`"timestampMs":1700000000123,"stackTraceLimit":-1,"keepLogs":20,"sizeLimit":4096}', now())`)
		bundle.add(t, job{queue: "q", name: "new", opts: &drover.JobOptions{
			Delay: 1500 * time.Millisecond, Priority: 7, LIFO: true, Attempts: 5,
			Backoff:          &drover.Backoff{Type: drover.BackoffExponential, Delay: 2 * time.Second, Jitter: 0.5},
			RemoveOnComplete: &drover.Retention{Count: 100, Age: time.Hour, Limit: 10},
			RemoveOnFail:     &drover.Retention{Remove: true},
			Timestamp:        time.UnixMilli(1_700_000_000_123), StackTraceLimit: -1, KeepLogs: 20, SizeLimit: 4096,
		}})
		stats, err := bundle.newRelay(t, nil).Flush(ctx)
		require.NoError(t, err)
		require.Equal(t, outbox.Stats{Created: 2}, stats)
		rows := bundle.rows(t)
		require.Len(t, rows, 2)
		var opts []string
		for _, r := range rows {
			require.True(t, r.Sent, "row %d: %s", r.ID, r.LastError)
			o, err := bundle.rdb.HGet(ctx, bundle.prefix+":q:"+r.JobID, "opts").Result()
			require.NoError(t, err)
			opts = append(opts, o)
		}
		require.JSONEq(t, strings.Replace(opts[1], `"outbox-2"`, `"outbox-1"`, 1), opts[0], "only the job id differs")
		require.Contains(t, opts[0], `"kl":20`)
	})

	t.Run("CloseReturnsWhenTheNetworkGoesMidBatch", func(t *testing.T) {
		t.Parallel()

		// The network to PostgreSQL stops carrying anything (a partition:
		// no reset) just as a batch fails. Close must return: before, the
		// batch's rollback, detached from the relay's contexts so that it
		// reaches the database after a cancel, waited for an answer without
		// any bound, and Close with it.
		bundle := setupPostgres(t)
		bundle.add(t, job{queue: "q", name: "a"})
		proxy, pool := pgtest.ConnectThroughProxy(t, bundle.dsn)
		ob := outbox.NewPostgres(pool)
		relay := relayWithPrefix(t, bundle.prefix, func(o *outbox.RelayOptions) (*outbox.Relay, error) {
			return outbox.NewRelay(ob, bundle.rdb, o)
		}, &outbox.RelayOptions{PollInterval: time.Hour})
		failed := make(chan struct{})
		var once sync.Once
		outbox.SetTestHooks(relay, func(context.Context) error {
			proxy.SetBlackhole(true)
			once.Do(func() { close(failed) })
			return errors.New("redis unreachable")
		}, nil, nil)
		require.NoError(t, relay.Start(ctx))
		<-failed

		closed := make(chan error, 1)
		go func() {
			cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			closed <- relay.Close(cctx)
		}()
		defer func() { proxy.SetBlackhole(false); require.NoError(t, <-closed) }()
		select {
		case err := <-closed:
			closed <- err
			require.NoError(t, err)
		case <-time.After(15 * time.Second):
			t.Fatal("Close did not return 15 s after its context ended")
		}
	})

	t.Run("CloseEndsAStartWaitingForAnUnreachableDatabase", func(t *testing.T) {
		t.Parallel()

		// Start runs in a goroutine of its own, as under an errgroup, with
		// a context that never ends, while the network to PostgreSQL
		// carries nothing: its ping waits. Shutdown then calls Close with a
		// deadline, which must return by it. Before, Close waited for the
		// lifecycle lock that the stuck Start held, past its deadline and
		// for as long as the partition lasted (10 s here, then the relay
		// started after all).
		bundle := setupPostgres(t)
		proxy, pool := pgtest.ConnectThroughProxy(t, bundle.dsn)
		relay, err := outbox.NewRelay(outbox.NewPostgres(pool), bundle.rdb, &outbox.RelayOptions{QueueOptions: &drover.QueueOptions{Prefix: bundle.prefix}})
		require.NoError(t, err)
		proxy.SetBlackhole(true)
		started := make(chan error, 1)
		go func() { started <- relay.Start(ctx) }()
		time.Sleep(200 * time.Millisecond) // Start is waiting for the database

		closed := make(chan error, 1)
		go func() {
			cctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
			defer cancel()
			closed <- relay.Close(cctx)
		}()
		select {
		case err := <-closed:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			proxy.SetBlackhole(false)
			err := <-closed
			t.Fatalf("Close did not return 10 s after its context ended, while Start waited for PostgreSQL (then: %v)", err)
		}
		require.ErrorIs(t, <-started, drover.ErrClosed, "the abandoned Start reports the relay closed")
		proxy.SetBlackhole(false)
		require.ErrorIs(t, relay.Start(ctx), drover.ErrClosed)
	})

	t.Run("TheListenerReconnectsAfterLosingItsConnection", func(t *testing.T) {
		t.Parallel()

		bundle := setupPostgres(t)
		logs := &logSink{}
		relay := bundle.newRelay(t, &outbox.RelayOptions{PollInterval: time.Hour, MinRetryDelay: 10 * time.Millisecond, Logger: logs.logger()})
		require.NoError(t, relay.Start(ctx))

		admin := pgtest.Connect(t, bundle.dsn)
		var killed int
		require.NoError(t, admin.QueryRow(ctx, `
			SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
			WHERE datname = current_database() AND query LIKE 'LISTEN%'`).Scan(&killed))
		require.Equal(t, 1, killed)
		testkit.WaitFor(t, 10*time.Second, "the loss to be noticed", func() bool {
			return strings.Contains(logs.String(), "outbox listen connection lost; reconnecting")
		})

		bundle.add(t, job{queue: "q", name: "a"})
		testkit.WaitFor(t, 10*time.Second, "the row relayed", func() bool { return len(pending(bundle.rows(t))) == 0 })
	})
}

// logSink collects a relay's log lines.
type logSink struct {
	mu    sync.Mutex
	lines strings.Builder
	waits []time.Duration
}

func (s *logSink) logger() *slog.Logger {
	return slog.New(&sinkHandler{sink: s, text: slog.NewTextHandler(lockedWriter{s}, &slog.HandlerOptions{
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	})})
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lines.String()
}

// delays are the retry delays of the failed batches logged so far.
func (s *logSink) delays() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.waits...)
}

type lockedWriter struct{ s *logSink }

func (w lockedWriter) Write(p []byte) (int, error) {
	w.s.mu.Lock()
	defer w.s.mu.Unlock()
	return w.s.lines.Write(p)
}

// sinkHandler writes text and also records the delay of retry lines.
type sinkHandler struct {
	sink *logSink
	text slog.Handler
}

func (h *sinkHandler) Enabled(context.Context, slog.Level) bool { return true }

func (h *sinkHandler) Handle(ctx context.Context, r slog.Record) error {
	if r.Message == "outbox batch failed; retrying" {
		r.Attrs(func(a slog.Attr) bool {
			if a.Key == "delay" {
				h.sink.mu.Lock()
				h.sink.waits = append(h.sink.waits, a.Value.Duration())
				h.sink.mu.Unlock()
			}
			return true
		})
	}
	return h.text.Handle(ctx, r)
}

func (h *sinkHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &sinkHandler{sink: h.sink, text: h.text.WithAttrs(as)}
}

func (h *sinkHandler) WithGroup(name string) slog.Handler {
	return &sinkHandler{sink: h.sink, text: h.text.WithGroup(name)}
}

// proxy forwards TCP connections to a Redis server and can play dead: while
// down it cuts every connection and refuses new ones, as a Redis that went
// away would.
type proxy struct {
	ln     net.Listener
	target string
	mu     sync.Mutex
	down   bool
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
}

func startProxy(t *testing.T, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{ln: ln, target: target, conns: make(map[net.Conn]struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		p.setDown(true)
		p.wg.Wait()
	})
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) setDown(down bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.down = down
	if down {
		for c := range p.conns {
			_ = c.Close()
		}
	}
}

func (p *proxy) track(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.down {
		_ = c.Close()
		return false
	}
	p.conns[c] = struct{}{}
	return true
}

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		if !p.track(client) {
			continue
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil || !p.track(server) {
			_ = client.Close()
			continue
		}
		for _, pair := range [][2]net.Conn{{client, server}, {server, client}} {
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				_, _ = io.Copy(pair[0], pair[1])
				_ = pair[0].Close()
				_ = pair[1].Close()
			}()
		}
	}
}
