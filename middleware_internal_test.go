package drover

import (
	"context"
	"testing"
	"time"
)

type benchKey struct{}

// BenchmarkMiddlewareChain is what the worker pays per attempt for its
// middleware, without Redis: the per-attempt context slots, the chain
// around the processor and the Finished calls, for no middleware and for
// three (a context value, a Finished, a timer with a Finished). Compare
// the difference with the per-job cost of BenchmarkAddAndProcess.
func BenchmarkMiddlewareChain(b *testing.B) {
	three := []WorkerMiddleware{
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
	proc := ProcessorFunc(func(context.Context, *Job) (any, error) { return nil, nil })
	for _, c := range []struct {
		name string
		mws  []WorkerMiddleware
	}{{"none", nil}, {"three", three}} {
		b.Run(c.name, func(b *testing.B) {
			w := &Worker{mws: c.mws, chain: chain(proc, c.mws)}
			ctx, cancel := context.WithCancelCause(context.Background())
			defer cancel(nil)
			b.ReportAllocs()
			for b.Loop() {
				rj := &runningJob{ctx: ctx}
				job := &Job{ID: "1", run: rj}
				rj.job = job
				if len(w.mws) > 0 {
					rj.mwCtx = make([]context.Context, len(w.mws)+1)
				}
				rj.ran = true
				_, err := w.call(ctx, job)
				w.finished(rj, Finish{Outcome: OutcomeCompleted, Err: err})
			}
		})
	}
}
