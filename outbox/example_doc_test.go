package outbox_test

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/outbox"
)

// The package doc's snippets, compiled (they need your orders table;
// ExampleOutbox_AddTx runs the same calls on SQLite).

// placeOrder writes an order and its confirmation job in one transaction.
func placeOrder(ctx context.Context, pool *pgxpool.Pool, id string, total int) error {
	ob := outbox.NewPostgres(pool)

	tx, err := pool.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "INSERT INTO orders (id, total_cents) VALUES ($1, $2)", id, total); err != nil {
		return err
	}
	if err := ob.AddTx(ctx, tx, "emails", "order-confirmation", map[string]any{"order": id}, nil); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// relayRows runs a relay until ctx ends.
func relayRows(ctx context.Context, ob *outbox.Outbox[pgx.Tx], rdb redis.UniversalClient, logger *slog.Logger) error {
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	relay, err := outbox.NewRelay(ob, rdb, &outbox.RelayOptions{Logger: logger})
	if err != nil {
		return err
	}
	if err := relay.Start(ctx); err != nil {
		return err
	}
	defer relay.Close(shutdownCtx) // shutdownCtx: a context with a deadline
	<-ctx.Done()
	return nil
}

// The outbox on PostgreSQL: the job commits with the order.
func ExampleNewPostgres() {
	_, _ = placeOrder, relayRows
}
