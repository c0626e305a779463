package drover_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seed40057009/drover"
)

// A request/reply call over a queue: add a job, wait for a worker (drover
// or Node BullMQ) to answer it.
func ExampleJob_WaitUntilFinished() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()
	q, _ := drover.NewQueue(rdb, "quotes", &drover.QueueOptions{Prefix: prefix})

	w, _ := drover.NewWorker(rdb, "quotes", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		var in struct{ Cents, Qty int }
		if err := job.DecodeData(&in); err != nil {
			return nil, drover.Unrecoverable(err)
		}
		if in.Qty <= 0 {
			return nil, drover.Unrecoverable(fmt.Errorf("quantity %d", in.Qty))
		}
		return map[string]int{"total": in.Cents * in.Qty}, nil
	}), &drover.WorkerOptions{Prefix: prefix})
	_ = w.Start(ctx)
	defer w.Close(ctx)

	// Each wait is bounded by its ctx; the job is not cancelled when it ends.
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	res, _ := q.Add(ctx, "quote", map[string]int{"cents": 250, "qty": 4}, nil)
	v, err := res.Job.WaitUntilFinished(wctx)
	fmt.Println(string(v), err)

	res, _ = q.Add(ctx, "quote", map[string]int{"cents": 250, "qty": 0}, nil)
	_, err = res.Job.WaitUntilFinished(wctx)
	var failed *drover.JobFailedError
	if errors.As(err, &failed) {
		fmt.Println("failed:", failed.Reason)
	}
	// Output:
	// {"total":1000} <nil>
	// failed: quantity 0
}
