package drover_test

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
)

// docOverview is the package doc's snippet (compiled, not run: it uses the
// default prefix and the "emails" queue of Example_readme).
func docOverview(ctx context.Context, rdb redis.UniversalClient, payload any) error {
	shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
	defer cancel()
	q, err := drover.NewQueue(rdb, "emails", nil)
	if err != nil {
		return err
	}
	res, err := q.Add(ctx, "welcome", payload, &drover.JobOptions{Attempts: 5})
	if err != nil {
		return err
	}
	fmt.Println(res.Outcome) // created

	w, err := drover.NewWorker(rdb, "emails", drover.ProcessorFunc(send), &drover.WorkerOptions{Concurrency: 50})
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer w.Close(shutdownCtx) // waits for running jobs until shutdownCtx ends: give it a deadline
	return nil
}

// The package doc's overview: add a job, run a worker, close it with a
// deadline.
func Example_overview() {
	_ = docOverview
}
