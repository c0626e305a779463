package drover_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestConcurrentAdds: adds from many goroutines share script calls. Every
// add that returns without error must have stored exactly its job, custom
// ids must report duplicates correctly, and callers that give up (ctx
// cancelled) must not block the others.
func TestConcurrentAdds(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	const producers, perProducer = 16, 200
	var wg sync.WaitGroup
	var created, duplicates, cancelled atomic.Int64
	ok := make(chan [2]string, producers*perProducer)
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perProducer {
				actx := ctx
				var cancel context.CancelFunc = func() {}
				if rand.IntN(20) == 0 {
					actx, cancel = context.WithTimeout(ctx, time.Duration(rand.IntN(200))*time.Microsecond)
				}
				opts := &drover.JobOptions{}
				if i%10 == 0 {
					opts.JobID = fmt.Sprintf("shared-%d", i) // every producer adds these: one wins
				}
				res, err := b.queue.Add(actx, "job", map[string]int{"p": p, "i": i}, opts)
				cancel()
				if err != nil {
					require.ErrorIs(t, err, context.DeadlineExceeded)
					cancelled.Add(1)
					continue
				}
				switch res.Outcome {
				case drover.AddCreated:
					created.Add(1)
					ok <- [2]string{res.Job.ID, fmt.Sprintf(`{"i":%d,"p":%d}`, i, p)}
				case drover.AddDuplicate:
					duplicates.Add(1)
				default:
					t.Errorf("unexpected outcome %v", res.Outcome)
				}
			}
		}()
	}
	wg.Wait()
	close(ok)
	for pair := range ok {
		job, err := b.queue.GetJob(ctx, pair[0])
		require.NoError(t, err)
		require.JSONEq(t, pair[1], string(job.Data), "job %s holds its own data", pair[0])
	}
	counts, err := b.queue.GetJobCounts(ctx, drover.StateWaiting)
	require.NoError(t, err)
	// Cancelled adds may or may not have landed; all others did, once.
	require.GreaterOrEqual(t, counts[drover.StateWaiting], created.Load())
	require.LessOrEqual(t, counts[drover.StateWaiting], created.Load()+cancelled.Load())
	require.LessOrEqual(t, counts[drover.StateWaiting], int64(producers*perProducer-(producers-1)*perProducer/10))
	t.Logf("created %d, duplicates %d, cancelled %d", created.Load(), duplicates.Load(), cancelled.Load())
}
