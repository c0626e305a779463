package drover_test

import (
	"context"
	"fmt"
	"time"

	"github.com/seed40057009/drover"
)

// A job scheduler adds a run of its template on a timetable; whichever
// worker (drover's or Node BullMQ's) takes a run creates the next one.
func ExampleQueue_UpsertJobScheduler() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()
	q, _ := drover.NewQueue(rdb, "reports", &drover.QueueOptions{Prefix: prefix})

	// Every 100ms, three runs in all.
	first, err := q.UpsertJobScheduler(ctx, "heartbeat", drover.RepeatOptions{Every: 100 * time.Millisecond, Limit: 3},
		&drover.JobTemplate{Name: "beat", Data: map[string]string{"from": "example"}})
	if err != nil {
		panic(err)
	}
	fmt.Println("first run is a scheduler run:", first.JobSchedulerID == "heartbeat")

	runs := make(chan string, 10)
	w, _ := drover.NewWorker(rdb, "reports", drover.ProcessorFunc(func(_ context.Context, job *drover.Job) (any, error) {
		runs <- job.Name
		return nil, nil
	}), &drover.WorkerOptions{Prefix: prefix})
	_ = w.Start(ctx)
	for range 3 {
		fmt.Println("ran", <-runs)
	}
	_ = w.Close(ctx)

	// A cron scheduler: 07:30 every weekday in Paris (daylight saving as BullMQ).
	_, _ = q.UpsertJobScheduler(ctx, "morning", drover.RepeatOptions{Pattern: "30 7 * * 1-5", TZ: "Europe/Paris"}, nil)
	s, _ := q.GetJobScheduler(ctx, "morning")
	paris, _ := time.LoadLocation("Europe/Paris")
	fmt.Println("next morning run at", s.Next.In(paris).Format("15:04"))

	removed, _ := q.RemoveJobScheduler(ctx, "morning")
	fmt.Println("removed:", removed)
	// Output:
	// first run is a scheduler run: true
	// ran beat
	// ran beat
	// ran beat
	// next morning run at 07:30
	// removed: true
}
