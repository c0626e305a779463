package pgmigrate_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite"

	"github.com/seed40057009/drover/pgmigrate"
)

// Up creates drover's tables; a second run finds nothing to do. On
// PostgreSQL, pass pgmigrate.Postgres(pool) instead.
func ExampleUp() {
	ctx := context.Background()

	dir, err := os.MkdirTemp("", "pgmigrate-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sqlDB, err := sql.Open("sqlite", filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer sqlDB.Close()
	db := pgmigrate.SQLite(sqlDB)

	applied, err := pgmigrate.Up(ctx, db, nil)
	if err != nil {
		log.Fatal(err)
	}
	for _, m := range applied {
		fmt.Printf("applied %03d_%s\n", m.Version, m.Name)
	}

	applied, err = pgmigrate.Up(ctx, db, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("second run applied", len(applied))

	// Output:
	// applied 001_operations
	// applied 002_outbox
	// applied 003_outbox_claims
	// second run applied 0
}

// Status lists what a database has; Down takes it back to a version.
func ExampleStatus() {
	ctx := context.Background()

	dir, err := os.MkdirTemp("", "pgmigrate-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	sqlDB, err := sql.Open("sqlite", filepath.Join(dir, "app.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer sqlDB.Close()
	db := pgmigrate.SQLite(sqlDB)

	if _, err := pgmigrate.Up(ctx, db, nil); err != nil {
		log.Fatal(err)
	}
	if _, err := pgmigrate.Down(ctx, db, 1, nil); err != nil {
		log.Fatal(err)
	}

	statuses, err := pgmigrate.Status(ctx, db)
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range statuses {
		fmt.Printf("%03d_%s applied=%t\n", s.Version, s.Name, s.Applied)
	}

	// Output:
	// 001_operations applied=true
	// 002_outbox applied=false
	// 003_outbox_claims applied=false
}
