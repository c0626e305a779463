package drover_test

import (
	"context"
	"errors"
	"log/slog"
	"os"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/logkey"
)

// A worker's log lines about a job that fails twice: the first failure is
// retried (info), the second fails it for good (warning). Each line names
// the queue, the job and its attempt, the operation key (here the
// deduplication id), the outcome and the error's class; the job's data is
// never logged. The time, pid, worker name and duration are left out here
// only so that the output is the same on every run.
func ExampleWorkerOptions_logging() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()

	varying := map[string]bool{slog.TimeKey: true, logkey.PID: true, logkey.Worker: true, logkey.Duration: true}
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		Level: slog.LevelInfo, // the default logger shows warnings only
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if varying[a.Key] {
				return slog.Attr{}
			}
			return a
		},
	}))

	q, _ := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix, Logger: logger})
	res, _ := q.Add(ctx, "invoice", map[string]string{"to": "ada@example.com"}, &drover.JobOptions{
		Attempts: 2, Deduplication: &drover.Deduplication{ID: "invoice-117"}})

	w, _ := drover.NewWorker(rdb, "mail", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
		return nil, errors.New("smtp: 550 mailbox unavailable")
	}), &drover.WorkerOptions{Prefix: prefix, Concurrency: 1, Logger: logger})
	_ = w.Start(ctx)
	waitForState(q, res.Job.ID, drover.StateFailed)
	_ = w.Close(ctx)
	// Output:
	// level=INFO msg="worker started" queue=mail concurrency=1
	// level=INFO msg="job finished" queue=mail job_name=invoice job_id=1 attempt=1 op_key=invoice-117 outcome=retried error_class=error error="smtp: 550 mailbox unavailable"
	// level=WARN msg="job finished" queue=mail job_name=invoice job_id=1 attempt=2 op_key=invoice-117 outcome=retries-exhausted error_class=error error="smtp: 550 mailbox unavailable"
	// level=INFO msg="worker closed" queue=mail
}
