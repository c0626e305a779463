package drover_test

import (
	"context"
	"fmt"
	"time"

	"github.com/seed40057009/drover"
)

// A producer middleware that stamps every job it adds with the tenant found
// in the context, and a worker middleware that puts it back into the
// processor's context and reports each attempt's outcome.
func ExampleWorkerMiddleware() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()

	type tenantKey struct{}
	stamp := func(ctx context.Context, jobs []drover.BulkJob, next drover.AddFunc) ([]*drover.AddResult, error) {
		for i := range jobs {
			jobs[i].Data = map[string]any{"tenant": ctx.Value(tenantKey{}), "payload": jobs[i].Data}
		}
		return next(ctx, jobs)
	}
	q, _ := drover.NewQueue(rdb, "reports", &drover.QueueOptions{Prefix: prefix,
		AddMiddleware: []drover.AddMiddleware{stamp}})
	res, _ := q.Add(context.WithValue(ctx, tenantKey{}, "acme"), "render", "q3.pdf", nil)

	done := make(chan struct{})
	tenant := drover.WorkerMiddleware{
		Process: func(ctx context.Context, job *drover.Job, next drover.ProcessorFunc) (any, error) {
			var env struct{ Tenant string }
			if err := job.DecodeData(&env); err != nil {
				return nil, drover.Unrecoverable(err)
			}
			return next(context.WithValue(ctx, tenantKey{}, env.Tenant), job)
		},
		Finished: func(ctx context.Context, job *drover.Job, f drover.Finish) {
			fmt.Printf("job %s for %v: %s\n", job.Name, ctx.Value(tenantKey{}), f.Outcome)
			close(done)
		},
	}
	w, _ := drover.NewWorker(rdb, "reports", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		fmt.Println("rendering for", ctx.Value(tenantKey{}))
		return nil, nil
	}), &drover.WorkerOptions{Prefix: prefix, Middleware: []drover.WorkerMiddleware{tenant}})
	_ = w.Start(ctx)
	defer w.Close(ctx)

	select {
	case <-done:
	case <-time.After(10 * time.Second):
	}
	fmt.Println("job", res.Job.ID, "data", string(res.Job.Data))
	// Output:
	// rendering for acme
	// job render for acme: completed
	// job 1 data {"payload":"q3.pdf","tenant":"acme"}
}
