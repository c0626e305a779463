package drover_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seed40057009/drover"
)

// A worker without a Processor hands jobs to its caller, as BullMQ's
// worker.getNextJob does: the caller picks the lock token, keeps the lock
// and ends each attempt itself. Any process that knows the token, Node's
// included, may end it.
func ExampleWorker_NextJob() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()
	q, _ := drover.NewQueue(rdb, "thumbnails", &drover.QueueOptions{Prefix: prefix})
	_, _ = q.Add(ctx, "resize", map[string]int{"w": 64}, nil)
	_, _ = q.Add(ctx, "resize", map[string]int{"w": -1}, &drover.JobOptions{Attempts: 1})

	w, _ := drover.NewWorker(rdb, "thumbnails", nil, &drover.WorkerOptions{Prefix: prefix})
	_ = w.Start(ctx) // runs the stalled checker: a job whose lock expires comes back
	defer w.Close(ctx)

	for n := 1; ; n++ {
		token := fmt.Sprintf("%s:%d", w.ID(), n) // the lock value, unique per attempt
		job, err := w.NextJob(ctx, token, 100*time.Millisecond)
		if err != nil || job == nil {
			break // nothing came within the wait
		}
		_ = job.ExtendLock(ctx, token, time.Minute) // for long work, renew before the lock expires
		var size struct{ W int }
		_ = job.DecodeData(&size)
		if size.W <= 0 {
			err = job.Fail(ctx, token, errors.New("width must be positive"))
		} else {
			err = job.Complete(ctx, token, map[string]int{"bytes": size.W * 10})
		}
		fmt.Println("job", job.ID, "ended:", err == nil)
	}
	done, _ := q.GetJob(ctx, "1")
	failed, _ := q.GetJob(ctx, "2")
	fmt.Println(string(done.ReturnValue), failed.FailedReason)
	// Output:
	// job 1 ended: true
	// job 2 ended: true
	// {"bytes":640} width must be positive
}
