package interoptest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestInteropDeduplication: one producer is Node, the other drover, and they
// add the same operation under one deduplication id (issue 4, acceptance 5).
// One job exists; the second add is reported as deduplicated by its own
// side, and a deduplicated event names the owner.
func TestInteropDeduplication(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()

	for _, tc := range []struct {
		name   string
		ttl    time.Duration
		first  impl
		second impl
	}{
		{"NodeThenDrover", 0, nodeImpl, droverImpl},
		{"DroverThenNode", 0, droverImpl, nodeImpl},
		{"NodeThenDroverThrottled", time.Minute, nodeImpl, droverImpl},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			add := func(by impl, name string) (id string, outcome drover.AddOutcome) {
				t.Helper()
				if by == nodeImpl {
					de := map[string]any{"id": "sync-user-7"}
					if tc.ttl > 0 {
						de["ttl"] = tc.ttl.Milliseconds()
					}
					id, err := b.oracle.Add(ctx, b.prefix, queueName, name, map[string]any{"by": "node"},
						map[string]any{"deduplication": de})
					require.NoError(t, err)
					return id, 0
				}
				res, err := b.dq.Add(ctx, name, map[string]any{"by": "drover"},
					&drover.JobOptions{Deduplication: &drover.Deduplication{ID: "sync-user-7", TTL: tc.ttl}})
				require.NoError(t, err)
				return res.Job.ID, res.Outcome
			}
			firstID, _ := add(tc.first, "first")
			secondID, outcome := add(tc.second, "second")
			require.Equal(t, firstID, secondID, "both adds name the owner")
			if tc.second == droverImpl {
				require.Equal(t, drover.AddDeduplicated, outcome)
			}

			a := assertAgree(t, b, firstID)
			require.Equal(t, allCounts("waiting", 1), a.counts)
			job, err := b.dq.GetJob(ctx, firstID)
			require.NoError(t, err)
			require.Equal(t, "first", job.Name)
			require.Equal(t, "sync-user-7", job.DeduplicationID)
			nj, err := b.oracle.GetJob(ctx, b.prefix, queueName, firstID)
			require.NoError(t, err)
			require.Equal(t, "sync-user-7", nj.DeduplicationID)

			var dedups []drover.Event
			for _, e := range b.events(t) {
				if e.Name == drover.EventDeduplicated {
					dedups = append(dedups, e)
				}
			}
			require.Len(t, dedups, 1)
			require.Equal(t, firstID, dedups[0].JobID)
			require.Equal(t, "sync-user-7", dedups[0].DeduplicationID)

			// The owner finishing on the other side's worker frees the id
			// (simple mode) for the next add.
			stop := b.startWorker(t, tc.second, workerSpec{})
			b.waitEvents(t, 1, isCompleted)
			stop()
			if tc.ttl == 0 {
				thirdID, _ := add(tc.first, "third")
				require.NotEqual(t, firstID, thirdID, "a finished owner releases the deduplication id")
			}
		})
	}
}
