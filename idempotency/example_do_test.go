package idempotency_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"

	"github.com/seed40057009/drover/idempotency"
)

// Do runs the effect once per operation key; a second delivery of the same
// job finds the key taken and gets the recorded result back instead.
func ExampleLedger_Do() {
	ctx := context.Background()
	db, cleanup := exampleDB()
	defer cleanup()

	ledger := idempotency.NewSQLite(db, nil)
	key := idempotency.OpKey("charge", "order-42")

	charge := func(ctx context.Context, tx *sql.Tx) ([]byte, error) {
		_, err := tx.ExecContext(ctx, "INSERT INTO charges (order_id, cents) VALUES (?1, ?2)", "order-42", 1999)
		return []byte("charge-1"), err
	}

	for delivery := 1; delivery <= 2; delivery++ {
		res, err := ledger.Do(ctx, key, charge)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("delivery %d: %s, result %s\n", delivery, res.Status, res.Value)
	}

	var charges int
	if err := db.QueryRow("SELECT count(*) FROM charges").Scan(&charges); err != nil {
		log.Fatal(err)
	}
	fmt.Println("charges written:", charges)

	// Output:
	// delivery 1: claimed, result charge-1
	// delivery 2: already_completed, result charge-1
	// charges written: 1
}
