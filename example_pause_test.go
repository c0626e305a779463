package drover_test

import (
	"context"
	"fmt"
	"time"

	"github.com/seed40057009/drover"
)

// Pausing one worker while the queue goes on: the paused worker takes none
// of the jobs added meanwhile, and Resume picks them up at once.
func ExampleWorker_Pause() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()
	q, _ := drover.NewQueue(rdb, "reports", &drover.QueueOptions{Prefix: prefix})

	w, _ := drover.NewWorker(rdb, "reports", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		return "sent", nil
	}), &drover.WorkerOptions{Prefix: prefix})
	_ = w.Start(ctx)
	defer w.Close(ctx)

	// Returns once the worker takes no more jobs and the ones it ran are
	// written; bound the wait for long jobs with ctx, or pass
	// &drover.WorkerPauseOptions{DoNotWaitActive: true} to return at once.
	pctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := w.Pause(pctx, nil); err != nil {
		fmt.Println("pause:", err)
	}
	res, _ := q.Add(ctx, "daily", nil, nil)
	time.Sleep(100 * time.Millisecond)
	state, _ := q.GetJobState(ctx, res.Job.ID)
	fmt.Println(state, w.IsPaused(), w.IsRunning())

	_ = w.Resume()
	waitForState(q, res.Job.ID, drover.StateCompleted)
	state, _ = q.GetJobState(ctx, res.Job.ID)
	fmt.Println(state, w.IsPaused(), w.IsRunning())
	// Output:
	// waiting true false
	// completed false true
}
