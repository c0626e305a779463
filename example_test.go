package drover_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// exampleClient connects to the test binary's redis-server and returns a key
// prefix of the example's own. Real code passes its own client and keeps the
// default "bull" prefix.
func exampleClient() (*redis.Client, string) {
	srv, err := redistest.SharedServer()
	if err != nil {
		panic(err)
	}
	return redis.NewClient(&redis.Options{Addr: srv.Addr}), redistest.UniquePrefix()
}

// waitForState polls until the job reaches state (examples have no testing.T).
func waitForState(q *drover.Queue, id string, state drover.JobState) {
	for range 2000 {
		if s, _ := q.GetJobState(context.Background(), id); s == state {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	panic("job " + id + " never reached " + string(state))
}

func Example() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()

	q, _ := drover.NewQueue(rdb, "emails", &drover.QueueOptions{Prefix: prefix})
	res, err := q.Add(ctx, "welcome", map[string]string{"to": "ada@example.com"}, nil)
	if err != nil {
		panic(err)
	}
	fmt.Println("added job", res.Job.ID, res.Outcome)

	w, _ := drover.NewWorker(rdb, "emails", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		var msg struct{ To string }
		if err := job.DecodeData(&msg); err != nil {
			return nil, drover.Unrecoverable(err)
		}
		return "sent to " + msg.To, nil
	}), &drover.WorkerOptions{Prefix: prefix})
	_ = w.Start(ctx)
	defer w.Close(ctx)

	waitForState(q, res.Job.ID, drover.StateCompleted)
	job, _ := q.GetJob(ctx, res.Job.ID)
	fmt.Println(string(job.ReturnValue), "after", job.AttemptsMade, "attempt")
	// Output:
	// added job 1 created
	// "sent to ada@example.com" after 1 attempt
}

func ExampleQueue_Add_duplicate() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()
	q, _ := drover.NewQueue(rdb, "orders", &drover.QueueOptions{Prefix: prefix})

	// A deterministic id makes a second submission of the same order a no-op.
	first, _ := q.Add(ctx, "charge", map[string]int{"cents": 1250}, &drover.JobOptions{JobID: "order-A17"})
	again, _ := q.Add(ctx, "charge", map[string]int{"cents": 1250}, &drover.JobOptions{JobID: "order-A17"})
	fmt.Println(first.Outcome, again.Outcome, again.ExistingState)
	// Output: created duplicate waiting
}

func ExampleBackoff() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()
	q, _ := drover.NewQueue(rdb, "payments", &drover.QueueOptions{Prefix: prefix})

	tries := 0
	w, _ := drover.NewWorker(rdb, "payments", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		tries++
		if tries < 3 {
			return nil, fmt.Errorf("gateway timeout (try %d)", tries)
		}
		return "paid", nil
	}), &drover.WorkerOptions{Prefix: prefix})
	_ = w.Start(ctx)
	defer w.Close(ctx)

	res, _ := q.Add(ctx, "charge", nil, &drover.JobOptions{
		Attempts: 3,
		Backoff:  &drover.Backoff{Type: drover.BackoffExponential, Delay: 20 * time.Millisecond},
	})
	waitForState(q, res.Job.ID, drover.StateCompleted)
	job, _ := q.GetJob(ctx, res.Job.ID)
	for _, a := range job.Timeline {
		fmt.Printf("attempt %d: %s %s\n", a.N, a.Outcome, a.Backoff)
	}
	// Output:
	// attempt 1: retry-delayed 20ms
	// attempt 2: retry-delayed 40ms
	// attempt 3: completed 0s
}

func ExampleJob_Retry() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()
	q, _ := drover.NewQueue(rdb, "reports", &drover.QueueOptions{Prefix: prefix})

	var broken atomic.Bool
	broken.Store(true)
	w, _ := drover.NewWorker(rdb, "reports", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		if broken.Load() {
			return nil, errors.New("template missing")
		}
		return "rendered", nil
	}), &drover.WorkerOptions{Prefix: prefix})
	_ = w.Start(ctx)
	defer w.Close(ctx)

	res, _ := q.Add(ctx, "render", nil, &drover.JobOptions{Attempts: 2})
	waitForState(q, res.Job.ID, drover.StateFailed)
	job, _ := q.GetJob(ctx, res.Job.ID)
	fmt.Println("failed:", job.FailedReason, "attempts made:", job.AttemptsMade)

	broken.Store(false) // the fix is deployed: run it again with a fresh budget
	_ = job.Retry(ctx, drover.StateFailed, &drover.RetryOptions{ResetAttemptsMade: true})
	waitForState(q, res.Job.ID, drover.StateCompleted)
	job, _ = q.GetJob(ctx, res.Job.ID)
	fmt.Println("completed:", string(job.ReturnValue), "attempts made:", job.AttemptsMade)
	// Output:
	// failed: template missing attempts made: 2
	// completed: "rendered" attempts made: 1
}

func ExampleQueueEvents() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()
	q, _ := drover.NewQueue(rdb, "thumbs", &drover.QueueOptions{Prefix: prefix})
	events, _ := drover.NewQueueEvents(rdb, "thumbs", &drover.QueueEventsOptions{Prefix: prefix, LastEventID: "0"})

	_, _ = q.Add(ctx, "resize", nil, &drover.JobOptions{JobID: "img-1"})
	_, _ = q.Add(ctx, "resize", nil, &drover.JobOptions{JobID: "img-1"})
	for range 3 {
		ev, _ := events.Next(ctx)
		fmt.Println(ev.Name, ev.JobID)
	}
	// Output:
	// added img-1
	// waiting img-1
	// duplicated img-1
}
