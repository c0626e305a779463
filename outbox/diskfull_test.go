package outbox_test

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/testkit/pgtest"
	"github.com/seed40057009/drover/outbox"
)

// TestRelayOnAFullDisk: drover_outbox lives on a file system that is full
// (a 1 MiB tmpfs tablespace, filled by another table) and its pages are
// full, so a batch's marks (an UPDATE whose new row versions need a new
// page) fail with SQLSTATE 53100 after the batch added its jobs. Flush
// must fail saying so, the rows stay pending, and once space is freed the
// same relay marks them, finding their jobs as duplicates: one job per
// row, without a restart.
func TestRelayOnAFullDisk(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	bundle := setupPostgres(t)
	space := pgtest.NewTinySpace(t, pgtest.Connect(t, bundle.dsn), "drover_outbox")

	// Rows of about 1.9 kB (kept in the page, not compressed): four fill
	// a page, and marking one needs room on another.
	pad := strings.Repeat("x", 1900)
	const n = 8
	for i := range n {
		bundle.add(t, job{queue: "q", name: "n", data: map[string]any{"i": i, "pad": pad}})
	}
	space.Fill(t)

	relay := bundle.relay(t, bundle.rdb, nil)
	_, err := relay.Flush(ctx)
	require.Error(t, err, "the marks cannot be stored")
	require.True(t, pgtest.IsDiskFull(err), "the error says why: %v", err)
	require.Len(t, pending(bundle.rows(t)), n, "the rows stay pending")
	require.EqualValues(t, n, bundle.jobCount(t, "q"), "the batch's jobs are in Redis")

	space.Free(t)
	stats, err := relay.Flush(ctx)
	require.NoError(t, err)
	require.Equal(t, outbox.Stats{Duplicates: n}, stats)
	require.Empty(t, pending(bundle.rows(t)))
	require.EqualValues(t, n, bundle.jobCount(t, "q"), "one job per row")
}
