package outbox_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/outbox"
)

// TestRelayDebouncedRowsKeepTheirOrder: two relays, two debounced rows of
// one Deduplication ID (Replace: the later add replaces the delayed
// earlier job). Relay A adds row 1's job and dies before marking the row;
// meanwhile relay B takes row 2, which A's claim does not hold. Before,
// B added row 2's job (replacing row 1's) and marked it sent, and the next
// relay of row 1, left pending by A's death, re-added row 1's job, which
// replaced row 2's: the older row won, the newer job was gone. A row now
// waits while an older row of its Deduplication ID is pending (held by
// another relay), so the rows reach Redis in their order.
func TestRelayDebouncedRowsKeepTheirOrder(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			bundle := d.setup(t)
			debounced := func(name string) job {
				return job{queue: "q", name: name, data: name, opts: &drover.JobOptions{
					Delay: time.Hour, Deduplication: &drover.Deduplication{ID: "search-index", Replace: true}}}
			}
			bundle.add(t, debounced("older"))

			a := bundle.newRelay(t, nil)
			b := bundle.newRelay(t, nil)
			added, release := make(chan struct{}), make(chan struct{})
			var released sync.Once
			free := func() { released.Do(func() { close(release) }) }
			t.Cleanup(free) // before the relays' Close, should the test fail while A waits
			outbox.SetTestHooks(a, nil, func(context.Context) error {
				close(added)
				<-release
				return errors.New("relay A dies")
			}, nil)
			done := make(chan error, 1)
			go func() {
				_, err := a.Flush(ctx)
				done <- err
			}()
			<-added // row 1's job is in Redis, the row not marked
			bundle.add(t, debounced("newer"))
			_, err := b.Flush(ctx)
			require.NoError(t, err)
			free()
			require.Error(t, <-done, "relay A died")

			// Row 1 is pending again; relays go on until every row is sent.
			for range 3 {
				_, err = b.Flush(ctx)
				require.NoError(t, err)
			}
			rows := bundle.rows(t)
			require.Empty(t, pending(rows), "every row relayed: %+v", rows)

			q := bundle.queue(t, "q")
			delayed, err := q.GetJobs(ctx, []drover.JobState{drover.StateDelayed}, 0, -1, true)
			require.NoError(t, err)
			require.Len(t, delayed, 1, "one debounced job")
			require.Equal(t, "newer", delayed[0].Name, "the newer row's job stands (%s)", delayed[0].ID)
		})
	}
}

// TestRelayRowsGoOnPastAWaitingRow: a row that waits for an older row of
// its Deduplication ID held by another relay does not stop the rows behind
// it: a Flush with batches of 2 relays every other row, batch after batch,
// and leaves only the waiting one pending.
func TestRelayRowsGoOnPastAWaitingRow(t *testing.T) {
	t.Parallel()
	for _, d := range dialects {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			bundle := d.setup(t)
			debounced := job{queue: "q", name: "d", opts: &drover.JobOptions{
				Delay: time.Hour, Deduplication: &drover.Deduplication{ID: "search-index", Replace: true}}}
			bundle.add(t, debounced)

			a := bundle.newRelay(t, &outbox.RelayOptions{BatchSize: 1})
			b := bundle.newRelay(t, &outbox.RelayOptions{BatchSize: 2})
			added, release := make(chan struct{}), make(chan struct{})
			var released sync.Once
			free := func() { released.Do(func() { close(release) }) }
			t.Cleanup(free) // before the relays' Close, should the test fail while A waits
			var first sync.Once
			outbox.SetTestHooks(a, nil, func(context.Context) error {
				first.Do(func() { // A's first batch, row 1 alone; its next ones go through
					close(added)
					<-release
				})
				return nil
			}, nil)
			done := make(chan error, 1)
			go func() {
				_, err := a.Flush(ctx)
				done <- err
			}()
			<-added
			bundle.add(t, debounced, job{queue: "q", name: "p"}, job{queue: "q", name: "p"}, job{queue: "q", name: "p"})
			stats, err := b.Flush(ctx)
			require.NoError(t, err)
			require.Equal(t, outbox.Stats{Created: 3}, stats, "the plain rows")
			require.Equal(t, []int64{1, 2}, pending(bundle.rows(t)), "A's row, and the row waiting for it")
			free()
			require.NoError(t, <-done) // A may relay row 2 itself, after row 1

			_, err = b.Flush(ctx)
			require.NoError(t, err)
			require.Empty(t, pending(bundle.rows(t)))
			delayed, err := bundle.queue(t, "q").GetJobs(ctx, []drover.JobState{drover.StateDelayed}, 0, -1, true)
			require.NoError(t, err)
			require.Len(t, delayed, 1)
			require.Equal(t, "outbox-2", delayed[0].ID, "the newer debounced row's job replaced the older one's")
		})
	}
}
