package drover_test

import (
	"context"
	"fmt"
	"time"

	"github.com/seed40057009/drover"
)

// RunAt schedules a job for a point in time (asynq's ProcessAt, River's
// ScheduledAt). It is stored as BullMQ stores any delayed job, so Node
// BullMQ and Job.Opts read it back as the delay from the job's timestamp.
func ExampleJobOptions_runAt() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()
	q, _ := drover.NewQueue(rdb, "reports", &drover.QueueOptions{Prefix: prefix})

	nineAM := time.Date(2099, 1, 2, 9, 0, 0, 0, time.UTC)
	res, _ := q.Add(ctx, "daily", nil, &drover.JobOptions{RunAt: nineAM})
	job, _ := q.GetJob(ctx, res.Job.ID)
	state, _ := job.GetState(ctx)
	fmt.Println(state, job.Timestamp.Add(job.Delay).UTC())

	// Delay and RunAt are one choice: setting both is refused.
	_, err := q.Add(ctx, "daily", nil, &drover.JobOptions{RunAt: nineAM, Delay: time.Hour})
	fmt.Println(err)
	// Output:
	// delayed 2099-01-02 09:00:00 +0000 UTC
	// add job "daily" to queue "reports": invalid option: JobOptions.Delay and JobOptions.RunAt must not both be set, got Delay 1h0m0s and RunAt 2099-01-02T09:00:00Z
}
