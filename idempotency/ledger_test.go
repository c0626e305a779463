package idempotency_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/idempotency"
	"github.com/seed40057009/drover/internal/testkit/pgtest"
)

func TestLedger(t *testing.T) {
	t.Parallel()

	t.Run("Postgres", func(t *testing.T) {
		t.Parallel()
		exerciseLedger(t, setupPostgres)
	})
	t.Run("SQLite", func(t *testing.T) {
		t.Parallel()
		exerciseLedger(t, setupSQLite)
	})
}

// exerciseLedger is the behaviour every database must show.
func exerciseLedger[Tx any](t *testing.T, setup func(t *testing.T) *testBundle[Tx]) {
	ctx := context.Background()

	t.Run("DoRunsTheEffectOnceAndReplaysTheResult", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		var calls atomic.Int32
		effect := func(ctx context.Context, tx Tx) ([]byte, error) {
			calls.Add(1)
			return []byte("receipt-1"), bundle.writeEffect(ctx, tx, "order:1")
		}

		res, err := bundle.ledger.Do(ctx, "order:1", effect)
		require.NoError(t, err)
		require.Equal(t, idempotency.Result{Key: "order:1", Status: idempotency.Claimed, Value: []byte("receipt-1")}, res)

		for range 3 {
			res, err = bundle.ledger.Do(ctx, "order:1", effect)
			require.NoError(t, err)
			require.Equal(t, idempotency.Result{Key: "order:1", Status: idempotency.AlreadyCompleted, Value: []byte("receipt-1")}, res)
		}
		require.EqualValues(t, 1, calls.Load())
		rows, _ := bundle.effects(t)
		require.Equal(t, 1, rows)
	})

	t.Run("ClaimTxAndCompleteTxInTheCallersTransaction", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		tx := bundle.begin(t)
		claim, err := bundle.ledger.ClaimTx(ctx, tx, "invoice:7")
		require.NoError(t, err)
		require.Equal(t, idempotency.Claim{Key: "invoice:7", Status: idempotency.Claimed}, claim)
		require.NoError(t, bundle.writeEffect(ctx, tx, "invoice:7"))
		require.NoError(t, bundle.ledger.CompleteTx(ctx, tx, "invoice:7", []byte(`{"n":7}`)))
		bundle.commit(t, tx)

		tx = bundle.begin(t)
		claim, err = bundle.ledger.ClaimTx(ctx, tx, "invoice:7")
		require.NoError(t, err)
		require.Equal(t, idempotency.Claim{Key: "invoice:7", Status: idempotency.AlreadyCompleted, Result: []byte(`{"n":7}`)}, claim)
		bundle.rollback(t, tx)

		rows, _ := bundle.effects(t)
		require.Equal(t, 1, rows)
	})

	t.Run("RollbackReleasesTheKey", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		tx := bundle.begin(t)
		claim, err := bundle.ledger.ClaimTx(ctx, tx, "k")
		require.NoError(t, err)
		require.Equal(t, idempotency.Claimed, claim.Status)
		bundle.rollback(t, tx)

		tx = bundle.begin(t)
		claim, err = bundle.ledger.ClaimTx(ctx, tx, "k")
		require.NoError(t, err)
		require.Equal(t, idempotency.Claimed, claim.Status)
	})

	t.Run("AnErrorFromTheEffectRollsBackTheClaimAndIsReturnedAsIs", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		boom := errors.New("payment provider said no")
		res, err := bundle.ledger.Do(ctx, "pay:1", func(ctx context.Context, tx Tx) ([]byte, error) {
			require.NoError(t, bundle.writeEffect(ctx, tx, "pay:1"))
			return nil, boom
		})
		require.Same(t, boom, err) //nolint:testifylint // identity: the processor's error must pass untouched
		require.Equal(t, idempotency.Claimed, res.Status)
		rows, _ := bundle.effects(t)
		require.Zero(t, rows, "the effect of a failed attempt must roll back with its claim")

		res, err = bundle.ledger.Do(ctx, "pay:1", func(ctx context.Context, tx Tx) ([]byte, error) {
			return []byte("ok"), bundle.writeEffect(ctx, tx, "pay:1")
		})
		require.NoError(t, err)
		require.Equal(t, idempotency.Claimed, res.Status, "the retry claims the key afresh")
		rows, _ = bundle.effects(t)
		require.Equal(t, 1, rows)
	})

	t.Run("APanicInTheEffectRollsBack", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		require.Panics(t, func() {
			_, _ = bundle.ledger.Do(ctx, "p", func(ctx context.Context, tx Tx) ([]byte, error) {
				require.NoError(t, bundle.writeEffect(ctx, tx, "p"))
				panic("bug")
			})
		})
		rows, _ := bundle.effects(t)
		require.Zero(t, rows)
		res, err := bundle.ledger.Do(ctx, "p", func(context.Context, Tx) ([]byte, error) { return nil, nil })
		require.NoError(t, err)
		require.Equal(t, idempotency.Claimed, res.Status)
	})

	t.Run("SecondClaimInTheSameTransactionSaysDoNotRunAgain", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		tx := bundle.begin(t)
		claim, err := bundle.ledger.ClaimTx(ctx, tx, "k")
		require.NoError(t, err)
		require.Equal(t, idempotency.Claimed, claim.Status)
		claim, err = bundle.ledger.ClaimTx(ctx, tx, "k")
		require.NoError(t, err)
		require.Equal(t, idempotency.AlreadyCompleted, claim.Status)
	})

	t.Run("CommittedWithoutCompleteTxCountsAsCompletedWithNoResult", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		tx := bundle.begin(t)
		_, err := bundle.ledger.ClaimTx(ctx, tx, "k")
		require.NoError(t, err)
		bundle.commit(t, tx)

		var called bool
		res, err := bundle.ledger.Do(ctx, "k", func(context.Context, Tx) ([]byte, error) {
			called = true
			return nil, nil
		})
		require.NoError(t, err)
		require.False(t, called)
		require.Equal(t, idempotency.Result{Key: "k", Status: idempotency.AlreadyCompleted}, res)
	})

	t.Run("CompleteTxNeedsAClaim", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		tx := bundle.begin(t)
		err := bundle.ledger.CompleteTx(ctx, tx, "never-claimed", nil)
		require.ErrorIs(t, err, idempotency.ErrNotClaimed)
		require.EqualError(t, err, `idempotency: operation key not claimed by this transaction: "never-claimed"`)

		_, err = bundle.ledger.ClaimTx(ctx, tx, "k")
		require.NoError(t, err)
		require.NoError(t, bundle.ledger.CompleteTx(ctx, tx, "k", []byte("1")))
		require.ErrorIs(t, bundle.ledger.CompleteTx(ctx, tx, "k", []byte("2")), idempotency.ErrNotClaimed,
			"a recorded result is never overwritten")
	})

	t.Run("CompleteTxAfterAlreadyCompletedIsRefused", func(t *testing.T) {
		t.Parallel()

		// A claim committed without CompleteTx (completed_at NULL), then a
		// transaction that finds it AlreadyCompleted, or never claims, and
		// calls CompleteTx anyway: it did not claim the key, so it must
		// not record a result over the committed claim's.
		bundle := setup(t)
		tx := bundle.begin(t)
		_, err := bundle.ledger.ClaimTx(ctx, tx, "k")
		require.NoError(t, err)
		bundle.commit(t, tx)

		tx = bundle.begin(t)
		claim, err := bundle.ledger.ClaimTx(ctx, tx, "k")
		require.NoError(t, err)
		require.Equal(t, idempotency.AlreadyCompleted, claim.Status)
		require.ErrorIs(t, bundle.ledger.CompleteTx(ctx, tx, "k", []byte("overwritten")), idempotency.ErrNotClaimed)
		bundle.commit(t, tx)

		tx = bundle.begin(t)
		require.ErrorIs(t, bundle.ledger.CompleteTx(ctx, tx, "k", []byte("overwritten")), idempotency.ErrNotClaimed)
		bundle.commit(t, tx)

		res, err := bundle.ledger.Do(ctx, "k", func(context.Context, Tx) ([]byte, error) { return nil, nil })
		require.NoError(t, err)
		require.Equal(t, idempotency.Result{Key: "k", Status: idempotency.AlreadyCompleted}, res)
	})

	t.Run("DoHandsTheKeyToTheEffect", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		var got string
		_, err := bundle.ledger.Do(ctx, "charge:9", func(ctx context.Context, _ Tx) ([]byte, error) {
			got, _ = idempotency.KeyFrom(ctx)
			return nil, nil
		})
		require.NoError(t, err)
		require.Equal(t, "charge:9", got)
	})

	t.Run("InvalidKeysAreRejectedBeforeTouchingTheDatabase", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		tests := []struct {
			name    string
			key     string
			wantErr string
		}{
			{"Empty", "", `idempotency: invalid operation key "": it is empty`},
			{"TooLong", strings.Repeat("x", 256), `idempotency: invalid operation key "` + strings.Repeat("x", 64) +
				`"...: it is 256 bytes, more than the maximum of 255`},
			{"NotUTF8", "order:\xff", `idempotency: invalid operation key "order:\xff": it is not valid UTF-8`},
			{"NUL", "a\x00b", `idempotency: invalid operation key "a\x00b": it contains a NUL byte`},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				t.Parallel()

				_, err := bundle.ledger.Do(ctx, tt.key, func(context.Context, Tx) ([]byte, error) {
					t.Fatal("the effect must not run for an invalid key")
					return nil, nil
				})
				require.ErrorIs(t, err, idempotency.ErrInvalidKey)
				require.EqualError(t, err, tt.wantErr)

				tx := bundle.begin(t)
				_, err = bundle.ledger.ClaimTx(ctx, tx, tt.key)
				require.EqualError(t, err, tt.wantErr)
				require.EqualError(t, bundle.ledger.CompleteTx(ctx, tx, tt.key, nil), tt.wantErr)
			})
		}
	})

	t.Run("AKeyOfExactlyMaxKeyLenBytesIsStored", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		key := strings.Repeat("é", 127) + "a" // 255 bytes, 128 characters
		require.Len(t, key, idempotency.MaxKeyLen)
		for _, want := range []idempotency.Status{idempotency.Claimed, idempotency.AlreadyCompleted} {
			res, err := bundle.ledger.Do(ctx, key, func(context.Context, Tx) ([]byte, error) { return nil, nil })
			require.NoError(t, err)
			require.Equal(t, want, res.Status)
		}
	})

	t.Run("LogsEveryClaim", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		noop := func(context.Context, Tx) ([]byte, error) { return nil, nil }
		_, err := bundle.ledger.Do(ctx, "a:1", noop)
		require.NoError(t, err)
		_, err = bundle.ledger.Do(ctx, "a:1", noop)
		require.NoError(t, err)
		require.Equal(t, ""+
			"level=INFO msg=\"operation claim\" op_key=a:1 claim=inserted\n"+
			"level=INFO msg=\"operation claim\" op_key=a:1 claim=existed\n",
			bundle.logs.String())
	})

	t.Run("PruneFreesOldKeys", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		noop := func(context.Context, Tx) ([]byte, error) { return nil, nil }
		for _, key := range []string{"a", "b", "c"} {
			_, err := bundle.ledger.Do(ctx, key, noop)
			require.NoError(t, err)
		}

		n, err := bundle.ledger.Prune(ctx, time.Now().Add(-time.Hour))
		require.NoError(t, err)
		require.Zero(t, n, "nothing is older than an hour")

		n, err = bundle.ledger.Prune(ctx, time.Now().Add(time.Minute))
		require.NoError(t, err)
		require.EqualValues(t, 3, n)

		res, err := bundle.ledger.Do(ctx, "a", noop)
		require.NoError(t, err)
		require.Equal(t, idempotency.Claimed, res.Status, "a pruned key can be claimed again")
	})

	t.Run("ACanceledContextRunsNothing", func(t *testing.T) {
		t.Parallel()

		bundle := setup(t)
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		_, err := bundle.ledger.Do(canceled, "k", func(context.Context, Tx) ([]byte, error) {
			t.Fatal("the effect must not run")
			return nil, nil
		})
		require.ErrorIs(t, err, context.Canceled)

		res, err := bundle.ledger.Do(ctx, "k", func(context.Context, Tx) ([]byte, error) { return nil, nil })
		require.NoError(t, err)
		require.Equal(t, idempotency.Claimed, res.Status)
	})
}

func TestLedgerPostgres(t *testing.T) {
	t.Parallel()

	ctx := context.Background()

	t.Run("CompleteTxAfterAClaimInASavepoint", func(t *testing.T) {
		t.Parallel()

		// The claiming transaction is recognised by the key's advisory
		// lock, which a released savepoint hands to its parent.
		bundle := setupPostgres(t)
		tx := bundle.begin(t)
		sp, err := tx.Begin(ctx)
		require.NoError(t, err)
		claim, err := bundle.ledger.ClaimTx(ctx, sp, "k")
		require.NoError(t, err)
		require.Equal(t, idempotency.Claimed, claim.Status)
		require.NoError(t, sp.Commit(ctx))
		require.NoError(t, bundle.ledger.CompleteTx(ctx, tx, "k", []byte("r")))
		bundle.commit(t, tx)

		res, err := bundle.ledger.Do(ctx, "k", func(context.Context, pgx.Tx) ([]byte, error) { return nil, nil })
		require.NoError(t, err)
		require.Equal(t, idempotency.Result{Key: "k", Status: idempotency.AlreadyCompleted, Value: []byte("r")}, res)
	})

	t.Run("ACommitWhoseAnswerIsLostIsReadBack", func(t *testing.T) {
		t.Parallel()

		// A proxy between the ledger and PostgreSQL lets the COMMIT run,
		// then loses its answer and resets the connection. Do reads the
		// claim back on another connection: the commit landed, so the
		// effect happened once, by this call, and Do must say so (Claimed,
		// the function's value, no error). Before, it failed with
		// ErrCommitInDoubt: a queue job with one attempt (the default)
		// ended failed although its effect had committed, and its retry,
		// if any, reported the effect as a duplicate suppressed.
		bundle := setupPostgres(t)
		proxy, pool := pgtest.ConnectThroughProxy(t, bundle.dsn)
		ledger := idempotency.NewPostgres(pool, nil)
		effect := func(ctx context.Context, tx pgx.Tx) ([]byte, error) { return []byte("sent"), pgEffect(ctx, tx, "k") }

		proxy.DropReplyTo("commit\x00") // pgx's COMMIT, not BEGIN's "read committed"
		res, err := ledger.Do(ctx, "k", effect)
		require.Equal(t, int64(1), proxy.Dropped())
		require.NoError(t, err, "the commit landed")
		require.Equal(t, idempotency.Result{Key: "k", Status: idempotency.Claimed, Value: []byte("sent")}, res)

		// The retry finds it done and runs nothing.
		res, err = ledger.Do(ctx, "k", func(context.Context, pgx.Tx) ([]byte, error) {
			t.Fatal("the effect committed: it must not run again")
			return nil, nil
		})
		require.NoError(t, err)
		require.Equal(t, idempotency.Result{Key: "k", Status: idempotency.AlreadyCompleted, Value: []byte("sent")}, res)
		rows, _ := bundle.effects(t)
		require.Equal(t, 1, rows)

		// A commit that PostgreSQL answered with an error is no doubt.
		bundle.exec(t, "CREATE TABLE deferred_unique (v int UNIQUE DEFERRABLE INITIALLY DEFERRED)")
		_, err = ledger.Do(ctx, "k2", func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
			_, err := tx.Exec(ctx, "INSERT INTO deferred_unique VALUES (1), (1)") // checked at COMMIT
			return nil, err
		})
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr)
		require.Equal(t, "23505", pgErr.Code)
		require.NotErrorIs(t, err, idempotency.ErrCommitInDoubt)
	})

	t.Run("ACommitWhoseAnswerIsLostWithTheDatabaseIsInDoubt", func(t *testing.T) {
		t.Parallel()

		// The COMMIT runs, its answer is lost and the database stays
		// unreachable (the proxy refuses new connections), so the claim
		// cannot be read back: Do must say the commit is in doubt, and a
		// Do once the database is back finds the effect done.
		bundle := setupPostgres(t)
		proxy, pool := pgtest.ConnectThroughProxy(t, bundle.dsn)
		ledger := idempotency.NewPostgres(pool, nil)
		effect := func(ctx context.Context, tx pgx.Tx) ([]byte, error) { return []byte("sent"), pgEffect(ctx, tx, "k") }

		proxy.DropReplyAndRefuse("commit\x00")
		res, err := ledger.Do(ctx, "k", effect)
		require.Equal(t, int64(1), proxy.Dropped())
		require.ErrorIs(t, err, idempotency.ErrCommitInDoubt)
		require.ErrorContains(t, err, `idempotency: commit outcome unknown (its answer was lost): operation "k": `)
		require.ErrorContains(t, err, "reading the claim back failed too")
		require.Equal(t, idempotency.Claimed, res.Status)

		require.NoError(t, proxy.Listen())
		res, err = ledger.Do(ctx, "k", func(context.Context, pgx.Tx) ([]byte, error) {
			t.Fatal("the effect committed: it must not run again")
			return nil, nil
		})
		require.NoError(t, err)
		require.Equal(t, idempotency.Result{Key: "k", Status: idempotency.AlreadyCompleted, Value: []byte("sent")}, res)
	})

	t.Run("ACommitThatNeverArrivedIsNoDoubt", func(t *testing.T) {
		t.Parallel()

		// The network holds the COMMIT (a partition that starts as it is
		// sent), Do's ctx ends waiting for the answer, and the server
		// session, still in the transaction, is killed before the network
		// heals: nothing committed. Do reads the claim back once it can
		// and must say the commit did not land (an error that is no
		// doubt), and the next Do runs the function: one effect.
		bundle := setupPostgres(t)
		proxy, pool := pgtest.ConnectThroughProxy(t, bundle.dsn)
		ledger := idempotency.NewPostgres(pool, nil)
		direct := pgtest.Connect(t, bundle.dsn) // around the proxy
		var pid atomic.Int64
		effect := func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
			var p int64
			if err := tx.QueryRow(ctx, "SELECT pg_backend_pid()").Scan(&p); err != nil {
				return nil, err
			}
			pid.Store(p)
			return []byte("sent"), pgEffect(ctx, tx, "k")
		}

		proxy.BlackholeAt("commit\x00")
		healed := make(chan struct{})
		go func() {
			defer close(healed)
			for start := time.Now(); !proxy.Blackholed() && time.Since(start) < 10*time.Second; {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(1500 * time.Millisecond) // past Do's ctx
			_, err := direct.Exec(context.Background(), "SELECT pg_terminate_backend($1)", pid.Load())
			if err == nil {
				for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(10 * time.Millisecond) {
					var n int
					if direct.QueryRow(context.Background(), "SELECT count(*) FROM pg_stat_activity WHERE pid = $1", pid.Load()).Scan(&n) != nil || n == 0 {
						break
					}
				}
			}
			proxy.SetBlackhole(false)
		}()
		dctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		res, err := ledger.Do(dctx, "k", effect)
		<-healed
		require.Error(t, err)
		require.NotErrorIs(t, err, idempotency.ErrCommitInDoubt)
		require.ErrorContains(t, err, "did not land")
		require.Equal(t, idempotency.Claimed, res.Status)
		rows, _ := bundle.effects(t)
		require.Zero(t, rows)

		res, err = ledger.Do(ctx, "k", effect)
		require.NoError(t, err)
		require.Equal(t, idempotency.Result{Key: "k", Status: idempotency.Claimed, Value: []byte("sent")}, res)
		rows, _ = bundle.effects(t)
		require.Equal(t, 1, rows)
	})

	t.Run("DoReturnsWhenTheNetworkGoesDuringTheEffect", func(t *testing.T) {
		t.Parallel()

		// The network to PostgreSQL stops carrying anything (a partition:
		// no reset) while the effect runs, and the effect fails when ctx
		// ends. Do must return soon after: before, its rollback, detached
		// from ctx to reach the database after ctx ended, waited for an
		// answer without any bound (until the partition healed).
		bundle := setupPostgres(t)
		proxy, pool := pgtest.ConnectThroughProxy(t, bundle.dsn)
		ledger := idempotency.NewPostgres(pool, nil)

		// ctx ends half a second after the effect began, not after Do was
		// called: on a busy machine the claim before the effect may take
		// longer than that (CI at 80bc8aa: "claim operation: timeout").
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		done := make(chan error, 1)
		go func() {
			_, err := ledger.Do(cctx, "k", func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
				proxy.SetBlackhole(true)
				time.AfterFunc(500*time.Millisecond, cancel)
				<-ctx.Done()
				return nil, errors.New("upstream timed out")
			})
			done <- err
		}()
		defer func() { proxy.SetBlackhole(false); require.Error(t, <-done) }()
		select {
		case err := <-done:
			done <- err
			require.EqualError(t, err, "upstream timed out")
		case <-time.After(15 * time.Second):
			t.Fatal("Do did not return 15 s after its context ended")
		}
	})

	t.Run("AConcurrentClaimerGetsInProgressElsewhereWithoutWaiting", func(t *testing.T) {
		t.Parallel()

		bundle := setupPostgres(t)
		holder := bundle.begin(t)
		claim, err := bundle.ledger.ClaimTx(ctx, holder, "k")
		require.NoError(t, err)
		require.Equal(t, idempotency.Claimed, claim.Status)

		// The holder is open, so this would hang if the claim waited for it;
		// the deadline turns a hang into a failure.
		deadline, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		other := bundle.begin(t)
		claim, err = bundle.ledger.ClaimTx(deadline, other, "k")
		require.NoError(t, err)
		require.Equal(t, idempotency.Claim{Key: "k", Status: idempotency.InProgressElsewhere}, claim)
		bundle.rollback(t, other)

		res, err := bundle.ledger.Do(deadline, "k", func(context.Context, pgx.Tx) ([]byte, error) {
			t.Fatal("the effect must not run while another transaction holds the key")
			return nil, nil
		})
		require.ErrorIs(t, err, idempotency.ErrInProgressElsewhere)
		require.EqualError(t, err, `idempotency: operation in progress in another transaction: "k"`)
		require.Equal(t, idempotency.InProgressElsewhere, res.Status)

		require.NoError(t, bundle.ledger.CompleteTx(ctx, holder, "k", []byte("first")))
		bundle.commit(t, holder)

		res, err = bundle.ledger.Do(ctx, "k", func(context.Context, pgx.Tx) ([]byte, error) {
			t.Fatal("the effect must not run again")
			return nil, nil
		})
		require.NoError(t, err)
		require.Equal(t, idempotency.Result{Key: "k", Status: idempotency.AlreadyCompleted, Value: []byte("first")}, res)
		require.Contains(t, bundle.logs.String(), "op_key=k claim=in_progress\n")
	})

	t.Run("WhenTheHolderRollsBackTheNextClaimerRuns", func(t *testing.T) {
		t.Parallel()

		bundle := setupPostgres(t)
		holder := bundle.begin(t)
		_, err := bundle.ledger.ClaimTx(ctx, holder, "k")
		require.NoError(t, err)
		_, err = bundle.ledger.Do(ctx, "k", func(context.Context, pgx.Tx) ([]byte, error) { return nil, nil })
		require.ErrorIs(t, err, idempotency.ErrInProgressElsewhere)
		bundle.rollback(t, holder)

		res, err := bundle.ledger.Do(ctx, "k", func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
			return nil, pgEffect(ctx, tx, "k")
		})
		require.NoError(t, err)
		require.Equal(t, idempotency.Claimed, res.Status)
	})

	t.Run("OtherKeysAreNotHeldUp", func(t *testing.T) {
		t.Parallel()

		bundle := setupPostgres(t)
		holder := bundle.begin(t)
		_, err := bundle.ledger.ClaimTx(ctx, holder, "k1")
		require.NoError(t, err)
		res, err := bundle.ledger.Do(ctx, "k2", func(context.Context, pgx.Tx) ([]byte, error) { return nil, nil })
		require.NoError(t, err)
		require.Equal(t, idempotency.Claimed, res.Status)
	})

	t.Run("RepeatableReadRacingACommitGetsASerializationFailure", func(t *testing.T) {
		t.Parallel()

		bundle := setupPostgres(t)
		pool := pgtest.Connect(t, bundle.dsn)
		late, err := pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
		require.NoError(t, err)
		defer func() { _ = late.Rollback(ctx) }()
		_, err = late.Exec(ctx, "SELECT 1") // takes the snapshot
		require.NoError(t, err)

		_, err = bundle.ledger.Do(ctx, "k", func(context.Context, pgx.Tx) ([]byte, error) { return nil, nil })
		require.NoError(t, err)

		_, err = bundle.ledger.ClaimTx(ctx, late, "k")
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr)
		require.Equal(t, "40001", pgErr.Code, "a retryable serialization failure, never a second claim")
	})
}

func TestLedgerSQLite(t *testing.T) {
	t.Parallel()

	ctx := context.Background()

	t.Run("AConcurrentClaimerWaitsForTheHolder", func(t *testing.T) {
		t.Parallel()

		bundle := setupSQLite(t)
		holder := bundle.begin(t)
		claim, err := bundle.ledger.ClaimTx(ctx, holder, "k")
		require.NoError(t, err)
		require.Equal(t, idempotency.Claimed, claim.Status)

		type outcome struct {
			res idempotency.Result
			err error
		}
		done := make(chan outcome, 1)
		go func() {
			res, err := bundle.ledger.Do(ctx, "k", func(context.Context, *sql.Tx) ([]byte, error) {
				return nil, errors.New("the effect must not run again")
			})
			done <- outcome{res, err}
		}()

		require.NoError(t, bundle.ledger.CompleteTx(ctx, holder, "k", []byte("first")))
		bundle.commit(t, holder)

		got := <-done
		require.NoError(t, got.err)
		require.Equal(t, idempotency.Result{Key: "k", Status: idempotency.AlreadyCompleted, Value: []byte("first")}, got.res)
	})
}

// TestNilHandlesAreErrors: a nil transaction, a nil function or a ledger made
// with a nil database handle is a programming error that the caller must be
// able to see as one. Before, each was a nil-pointer panic inside pgx or
// database/sql (ClaimTx(ctx, nil, key), Do(ctx, key, nil),
// NewPostgres(nil, nil).Do), which takes a worker process down.
func TestNilHandlesAreErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var nilEffect func(context.Context, pgx.Tx) ([]byte, error)

	pg := setupPostgres(t)
	_, err := pg.ledger.ClaimTx(ctx, nil, "k")
	require.EqualError(t, err, `idempotency: claim operation "k": the transaction is nil`)
	require.EqualError(t, pg.ledger.CompleteTx(ctx, nil, "k", nil), `idempotency: complete operation "k": the transaction is nil`)
	_, err = pg.ledger.Do(ctx, "k", nilEffect)
	require.EqualError(t, err, `idempotency: do operation "k": the function is nil`)

	lite := setupSQLite(t)
	_, err = lite.ledger.ClaimTx(ctx, (*sql.Tx)(nil), "k")
	require.EqualError(t, err, `idempotency: claim operation "k": the transaction is nil`)
	require.EqualError(t, lite.ledger.CompleteTx(ctx, nil, "k", nil), `idempotency: complete operation "k": the transaction is nil`)

	noDB := `the ledger was made with a nil database handle (NewPostgres or NewSQLite)`
	for name, ledger := range map[string]interface {
		Prune(context.Context, time.Time) (int64, error)
	}{
		"NewPostgres(nil)":                  idempotency.NewPostgres(nil, nil),
		"NewPostgres((*pgxpool.Pool)(nil))": idempotency.NewPostgres((*pgxpool.Pool)(nil), nil),
		"NewSQLite(nil)":                    idempotency.NewSQLite(nil, nil),
	} {
		_, err := ledger.Prune(ctx, time.Now())
		require.EqualError(t, err, "idempotency: prune: "+noDB, name)
	}
	_, err = idempotency.NewPostgres(nil, nil).Do(ctx, "k", func(context.Context, pgx.Tx) ([]byte, error) { return nil, nil })
	require.EqualError(t, err, `idempotency: do operation "k": `+noDB)
	_, err = idempotency.NewSQLite(nil, nil).Do(ctx, "k", func(context.Context, *sql.Tx) ([]byte, error) { return nil, nil })
	require.EqualError(t, err, `idempotency: do operation "k": `+noDB)
}
