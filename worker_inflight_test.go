package drover

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestInflight(t *testing.T) {
	t.Parallel()

	jobs := func(n int) []*runningJob {
		out := make([]*runningJob, n)
		for i := range out {
			out[i] = &runningJob{job: &Job{ID: "j"}}
		}
		return out
	}

	t.Run("TakeStopsAtConcurrency", func(t *testing.T) {
		t.Parallel()

		f := newInflight(3, time.Minute)
		require.Equal(t, 2, f.take(2))
		require.Equal(t, 1, f.take(5))
		require.Equal(t, 0, f.take(1))
		f.giveBack(2)
		require.Equal(t, 2, f.take(2))
	})

	t.Run("TakeWaitBlocksUntilASlotIsFree", func(t *testing.T) {
		t.Parallel()

		f := newInflight(1, time.Minute)
		running := jobs(1)
		require.Equal(t, 1, f.take(1))
		f.start(1, running)

		got := make(chan int)
		go func() { got <- f.takeWait(context.Background(), 4) }()
		select {
		case n := <-got:
			t.Fatalf("takeWait returned %d while every slot was taken", n)
		case <-time.After(20 * time.Millisecond):
		}
		f.finish(running, 0, nil)
		require.Equal(t, 1, <-got)
	})

	t.Run("TakeWaitReturnsZeroWhenContextEnds", func(t *testing.T) {
		t.Parallel()

		f := newInflight(1, time.Minute)
		require.Equal(t, 1, f.take(1))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		require.Equal(t, 0, f.takeWait(ctx, 1))
	})

	t.Run("StartFreesTheSlotsNextDoesNotUse", func(t *testing.T) {
		t.Parallel()

		f := newInflight(4, time.Minute)
		require.Equal(t, 4, f.take(4))
		f.start(4, jobs(1))
		require.Equal(t, 1, f.count())
		require.Equal(t, 3, f.take(4))
	})

	t.Run("FinishHandsSlotsToNext", func(t *testing.T) {
		t.Parallel()

		f := newInflight(3, time.Minute)
		first := jobs(2)
		require.Equal(t, 2, f.take(2))
		f.start(2, first)
		extra := f.take(3)
		require.Equal(t, 1, extra)

		next := jobs(3)
		f.finish(first, extra, next)
		require.Equal(t, 3, f.count())
		require.Equal(t, 0, f.take(1), "the finished jobs' slots went to next")
		require.ElementsMatch(t, next, f.snapshot())

		f.finish(next, 0, nil)
		require.Equal(t, 0, f.count())
		require.Equal(t, 3, f.take(3))
	})

	t.Run("DrainReturnsFalseWhenContextEnds", func(t *testing.T) {
		t.Parallel()

		f := newInflight(1, time.Minute)
		running := jobs(1)
		f.start(f.take(1), running)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
		defer cancel()
		require.False(t, f.drain(ctx))
		f.finish(running, 0, nil)
		require.True(t, f.drain(context.Background()))
	})

	t.Run("WhileInFlightSkipsFinishedJobs", func(t *testing.T) {
		t.Parallel()

		f := newInflight(2, time.Minute)
		all := jobs(2)
		f.start(f.take(2), all)
		f.finish(all[:1], 0, nil)
		var seen []*runningJob
		f.whileInFlight(all, func(rj *runningJob) { seen = append(seen, rj) })
		require.Equal(t, all[1:], seen)
	})

	// Close's rule under load: jobs finish while handing their slots to
	// the jobs fetched in the same call, from many goroutines at once;
	// drain must not return while any chain of hand-overs goes on, and no
	// job may start after it returned.
	for _, concurrency := range []int{1, 8} {
		t.Run(fmt.Sprintf("DrainWaitsForEveryHandOver/Concurrency%d", concurrency), func(t *testing.T) {
			t.Parallel()
			drainWaitsForEveryHandOver(t, concurrency)
		})
	}
}

func drainWaitsForEveryHandOver(t *testing.T, concurrency int) {
	const budget = 4000
	f := newInflight(concurrency, time.Minute)
	var left atomic.Int64 // jobs still to be "fetched"
	left.Store(budget)
	var finished, afterDrain atomic.Int64
	var drained atomic.Bool
	var wg sync.WaitGroup

	fetch := func(n int) []*runningJob {
		var out []*runningJob
		for range n {
			if left.Add(-1) < 0 {
				break
			}
			out = append(out, &runningJob{job: &Job{ID: "j"}})
		}
		return out
	}
	var runJob func(rj *runningJob)
	runJob = func(rj *runningJob) {
		defer wg.Done()
		// Finish, handing this slot and whatever else is free to the
		// next jobs, as the finisher does.
		extra := f.take(2)
		next := fetch(1 + extra)
		if drained.Load() && len(next) > 0 {
			afterDrain.Add(1)
		}
		wg.Add(len(next))
		f.finish([]*runningJob{rj}, extra, next)
		finished.Add(1)
		for _, n := range next {
			go runJob(n)
		}
	}

	first := fetch(f.take(concurrency))
	wg.Add(len(first))
	f.start(concurrency, first)
	for _, rj := range first {
		go runJob(rj)
	}

	require.True(t, f.drain(context.Background()))
	drained.Store(true)
	require.LessOrEqual(t, left.Load(), int64(0),
		"drain returned while jobs were still to be handed over")
	wg.Wait()
	require.Zero(t, afterDrain.Load(), "a job started after drain returned")
	require.Equal(t, int64(budget), finished.Load())
	require.Equal(t, concurrency, f.take(concurrency), "every slot is free again")
}
