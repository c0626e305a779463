package idempotency_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/idempotency"
	"github.com/seed40057009/drover/internal/testkit/pgtest"
)

// TestDoOnAFullDisk: the ledger's table lives on a file system that is
// full (a 1 MiB tmpfs tablespace, filled by another table), so its claim
// cannot extend the table (SQLSTATE 53100, "could not extend file"). Do
// must fail with that error, writing no effect; once space is freed, the
// same Do claims the key and writes the effect once, without a new ledger
// or pool.
func TestDoOnAFullDisk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupPostgres(t)
	space := pgtest.NewTinySpace(t, pgtest.Connect(t, b.dsn), "drover_operations")
	space.Fill(t)

	key := idempotency.OpKey("effect", "full-disk")
	effect := func(ctx context.Context, tx pgx.Tx) ([]byte, error) {
		return []byte("done"), b.writeEffect(ctx, tx, key)
	}
	_, err := b.ledger.Do(ctx, key, effect)
	require.Error(t, err, "the claim cannot be stored")
	require.True(t, pgtest.IsDiskFull(err), "the error says why: %v", err)
	require.ErrorContains(t, err, "operation")
	rows, _ := b.effects(t)
	require.Zero(t, rows, "no effect without its claim")

	space.Free(t)
	res, err := b.ledger.Do(ctx, key, effect)
	require.NoError(t, err)
	require.Equal(t, idempotency.Claimed, res.Status)
	res, err = b.ledger.Do(ctx, key, effect)
	require.NoError(t, err)
	require.Equal(t, idempotency.AlreadyCompleted, res.Status)
	rows, _ = b.effects(t)
	require.Equal(t, 1, rows, "the effect written once")
}
