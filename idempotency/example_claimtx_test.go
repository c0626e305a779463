package idempotency_test

import (
	"context"
	"fmt"
	"log"

	"github.com/seed40057009/drover/idempotency"
)

// ClaimTx joins a transaction the caller already has open: the claim, the
// effect and the recorded result commit together, or not at all.
func ExampleLedger_ClaimTx() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	ledger := idempotency.NewSQLite(db, nil)
	key := idempotency.OpKey("charge", "order-7")

	chargeOnce := func() (string, error) {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return "", err
		}
		defer tx.Rollback() //nolint:errcheck // a no-op after Commit

		claim, err := ledger.ClaimTx(ctx, tx, key) // claim first: see NewSQLite
		if err != nil {
			return "", err
		}
		if claim.Status != idempotency.Claimed {
			return fmt.Sprintf("%s (result %s)", claim.Status, claim.Result), nil
		}
		if _, err := tx.ExecContext(ctx, "INSERT INTO charges (order_id, cents) VALUES (?1, ?2)", "order-7", 500); err != nil {
			return "", err
		}
		if err := ledger.CompleteTx(ctx, tx, key, []byte("charge-7")); err != nil {
			return "", err
		}
		return claim.Status.String(), tx.Commit()
	}

	for range 2 {
		outcome, err := chargeOnce()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(outcome)
	}

	// Output:
	// claimed
	// already_completed (result charge-7)
}
