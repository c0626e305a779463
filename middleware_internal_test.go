package drover

import (
	"context"
	"testing"
	"time"
)

type benchKey struct{}

// threeMiddleware are the three of the middleware benchmarks: a context
// value, a Finished, a timer with a Finished.
func threeMiddleware() []WorkerMiddleware {
	return []WorkerMiddleware{
		{Process: func(ctx context.Context, job *Job, next ProcessorFunc) (any, error) {
			return next(context.WithValue(ctx, benchKey{}, 1), job)
		}},
		{Finished: func(context.Context, *Job, Finish) {}},
		{
			Process: func(ctx context.Context, job *Job, next ProcessorFunc) (any, error) {
				start := time.Now()
				v, err := next(ctx, job)
				_ = time.Since(start)
				return v, err
			},
			Finished: func(context.Context, *Job, Finish) {},
		},
	}
}

// chainAttempt makes one attempt through w's chain as run and the result
// writer do, without Redis: a fetch of one job (the worst case for the
// slots, which a fetch of many shares), the chain, the Finished calls.
func chainAttempt(ctx context.Context, w *Worker) {
	rj := &runningJob{ctx: ctx}
	job := &Job{ID: "1", run: rj}
	rj.job = job
	w.giveSlots([]*runningJob{rj})
	rj.ran = true
	_, err := w.call(rj)
	w.finished(rj, Finish{Outcome: OutcomeCompleted, Err: err})
}

func chainWorker(mws []WorkerMiddleware) *Worker {
	proc := ProcessorFunc(func(context.Context, *Job) (any, error) { return nil, nil })
	return &Worker{mws: mws, chain: chain(proc, mws)}
}

// BenchmarkMiddlewareChain is what the worker pays per attempt for its
// middleware, without Redis: the per-attempt context slots, the chain
// around the processor and the Finished calls, for no middleware and for
// three. Compare the difference with the per-job cost of
// BenchmarkMiddlewareOverhead's baseline.
func BenchmarkMiddlewareChain(b *testing.B) {
	for _, c := range []struct {
		name string
		mws  []WorkerMiddleware
	}{{"none", nil}, {"three", threeMiddleware()}} {
		b.Run(c.name, func(b *testing.B) {
			w := chainWorker(c.mws)
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			b.ReportAllocs()
			for b.Loop() {
				chainAttempt(ctx, w)
			}
		})
	}
}

// TestMiddlewareChainAllocs holds the middleware's share of the hot path's
// allocations (about 46 a job at concurrency 100, BenchmarkMiddlewareOverhead)
// to what the three middleware cannot avoid: the context value one of
// them makes, and the slots of a fetch of one job. It was 5 when Finished
// was handed a context.WithoutCancel of each context and every attempt
// made its own slots.
func TestMiddlewareChainAllocs(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	none, three := chainWorker(nil), chainWorker(threeMiddleware())
	base := testing.AllocsPerRun(200, func() { chainAttempt(ctx, none) })
	with := testing.AllocsPerRun(200, func() { chainAttempt(ctx, three) })
	if extra := with - base; extra > 2 {
		t.Fatalf("three middleware add %.0f allocations per attempt (%.0f without, %.0f with), want at most 2", extra, base, with)
	}
}
