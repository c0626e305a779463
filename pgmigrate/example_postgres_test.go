package pgmigrate_test

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed40057009/drover/pgmigrate"
)

// migrate is the package doc's snippet: migrations from a deploy step.
func migrate(ctx context.Context, pool *pgxpool.Pool) error {
	if _, err := pgmigrate.Up(ctx, pgmigrate.Postgres(pool), nil); err != nil {
		return err
	}
	return nil
}

// On PostgreSQL (ExampleUp runs the same on SQLite).
func ExamplePostgres() {
	_ = migrate
}
