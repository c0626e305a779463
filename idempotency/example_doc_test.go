package idempotency_test

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/idempotency"
)

// The package doc's snippets, compiled (they need your PostgreSQL schema and
// payment provider; ExampleLedger_Do and ExampleLedger_ClaimTx run the same
// calls on SQLite).

// welcomeProcessor is "Using it": the effect in the transaction that claims
// the key.
func welcomeProcessor(pool *pgxpool.Pool, userID string) drover.Processor {
	ledger := idempotency.NewPostgres(pool, nil)

	proc := drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		key := idempotency.OpKey("welcome-email", userID)
		res, err := ledger.Do(ctx, key, func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
			_, err := tx.Exec(ctx, "INSERT INTO outgoing_mail (user_id, template) VALUES ($1, 'welcome')", userID)
			return nil, err
		})
		if err != nil {
			return nil, err // ErrInProgressElsewhere too: the job retries later
		}
		if res.Status == idempotency.AlreadyCompleted {
			// a duplicate run: nothing was written twice
			return "already sent", nil
		}
		return nil, nil
	})
	return proc
}

// inOwnTx is the transaction-you-already-have form.
func inOwnTx(ctx context.Context, ledger *idempotency.Ledger[pgx.Tx], tx pgx.Tx, key string, result []byte) error {
	claim, err := ledger.ClaimTx(ctx, tx, key)
	if err != nil {
		return err
	}
	if claim.Status != idempotency.Claimed {
		return nil // done before, or being done right now by someone else
	}
	// ... write the effect with tx ...
	return ledger.CompleteTx(ctx, tx, key, result)
}

// charge and paymentAPI stand for a payment provider's client.
type charge struct{ body []byte }

func (c charge) JSON() []byte { return c.body }

type paymentAPI interface {
	FindByIdempotencyKey(ctx context.Context, key string) (charge, bool, error)
	Charge(ctx context.Context, order, key string) (charge, error)
}

// reconcileFirst is "Effects outside the database": look before charging
// again.
func reconcileFirst(ctx context.Context, ledger *idempotency.Ledger[pgx.Tx], job *drover.Job, payments paymentAPI, order, key string) (idempotency.Result, error) {
	res, err := ledger.Do(ctx, key, func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
		if job.AttemptsStarted > 1 { // an earlier attempt, failed or stalled, may have called
			if charge, ok, err := payments.FindByIdempotencyKey(ctx, key); err != nil {
				return nil, err
			} else if ok {
				return charge.JSON(), nil // it happened: record it, do not charge again
			}
		}
		charge, err := payments.Charge(ctx, order, key) // key as Idempotency-Key
		if err != nil {
			return nil, err
		}
		return charge.JSON(), nil
	})
	return res, err
}

// opKeyParts is OpKey's doc example.
func opKeyParts(orderID, groupID string) string {
	key := idempotency.OpKey("charge", orderID, "attempt-group", groupID)
	return key
}

// The snippets of the package doc on PostgreSQL.
func ExampleNewPostgres() {
	_, _, _, _ = welcomeProcessor, inOwnTx, reconcileFirst, opKeyParts
}
