package drover_test

import (
	"context"
	"fmt"
	"time"

	"github.com/seed40057009/drover"
)

// CancelJob ends a job that is not running yet for good, in one step (River's
// JobCancel): it fails, as Node BullMQ would write a job failed with
// UnrecoverableError, without an attempt. A job already finished is refused
// and left as it is.
func ExampleQueue_CancelJob() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()
	q, _ := drover.NewQueue(rdb, "invoices", &drover.QueueOptions{Prefix: prefix})

	res, _ := q.Add(ctx, "remind", nil, &drover.JobOptions{Delay: time.Hour, Attempts: 3})
	if err := q.CancelJob(ctx, res.Job.ID, "invoice paid", nil); err != nil {
		fmt.Println(err)
	}
	job, _ := q.GetJob(ctx, res.Job.ID)
	state, _ := job.GetState(ctx)
	fmt.Println(state, job.FailedReason, job.AttemptsMade)

	err := q.CancelJob(ctx, res.Job.ID, "again", nil)
	fmt.Println(err)
	// Output:
	// failed cancelled: invoice paid 0
	// cancel job "1" in queue "invoices": job not in the expected state: it is failed, not running (active with a live lock), waiting, prioritized or delayed
}
