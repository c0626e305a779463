package outbox_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/outbox"
	"github.com/seed40057009/drover/pgmigrate"
)

// AddTx writes the job in the same transaction as the business row; the
// relay adds it to its queue after the commit. The example uses SQLite; on
// PostgreSQL, use NewPostgres(pool) and pgx transactions, and the relay
// wakes on LISTEN/NOTIFY instead of polling.
func ExampleOutbox_AddTx() {
	ctx := context.Background()

	// Set-up: a throwaway Redis and SQLite database.
	server, err := redistest.Start()
	if err != nil {
		log.Fatal(err)
	}
	defer server.Stop()
	rdb := redis.NewClient(&redis.Options{Addr: server.Addr})
	defer rdb.Close()
	dir, err := os.MkdirTemp("", "outbox-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := pgmigrate.Up(ctx, pgmigrate.SQLite(db), nil); err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE orders (id INTEGER PRIMARY KEY, item TEXT)"); err != nil {
		log.Fatal(err)
	}

	ob := outbox.NewSQLite(db)

	// The business transaction: an order and its confirmation job.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO orders (id, item) VALUES (42, 'tea')"); err != nil {
		log.Fatal(err)
	}
	if err := ob.AddTx(ctx, tx, "emails", "order-confirmation", map[string]int{"order": 42},
		&drover.JobOptions{Attempts: 3}); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}

	// A relay moves it into the queue. In a service, Start it instead and
	// Close it on shutdown.
	relay, err := outbox.NewRelay(ob, rdb, nil)
	if err != nil {
		log.Fatal(err)
	}
	stats, err := relay.Flush(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("created:", stats.Created)

	queue, err := drover.NewQueue(rdb, "emails", nil)
	if err != nil {
		log.Fatal(err)
	}
	job, err := queue.GetJob(ctx, "outbox-1")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(job.ID, job.Name, string(job.Data), "attempts:", job.Opts.Attempts)

	// Output:
	// created: 1
	// outbox-1 order-confirmation {"order":42} attempts: 3
}
