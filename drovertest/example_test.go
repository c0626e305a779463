package drovertest_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/drovertest"
)

// Welcome is the typed job of the examples.
type Welcome struct {
	To string `json:"to"`
}

func (Welcome) Kind() string { return "welcome" }

// Test a processor the way a user's test does: one attempt, no Redis
// server, and assertions on its outcome, return value, logs and the jobs
// it added. (In a real test t comes from the test function.)
func ExampleRun() {
	t := &testing.T{}
	k := drovertest.New(t)
	audit := k.Queue("audit")

	var kinds drover.Kinds
	drover.Work(&kinds, func(ctx context.Context, job *drover.Job, w Welcome) (any, error) {
		_, _ = job.Log(ctx, "sending to "+w.To)
		_, err := audit.Add(ctx, "welcome-sent", map[string]string{"to": w.To}, nil)
		return "ok", err
	})

	res := k.Run(&kinds, "welcome", Welcome{To: "ada@example.com"}, nil)
	fmt.Println(res.Outcome, string(res.Value), res.Logs)
	fmt.Println(string(drovertest.RequireAdded(t, k, "audit", "welcome-sent").Data))

	res = k.Run(&kinds, "welcome", map[string]int{"to": 42}, nil)
	fmt.Println(res.Outcome, errors.Is(res.Err, drover.ErrInvalidData))
	// Output:
	// completed "ok" [sending to ada@example.com]
	// {"to":"ada@example.com"}
	// failed-unrecoverable true
}

// A worker on the kit's clock: a job that fails and backs off for an hour
// runs again as soon as the test moves the clock by an hour.
func ExampleKit_Advance() {
	t := &testing.T{}
	k := drovertest.New(t)
	tries := 0
	k.StartWorker("mail", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) {
		if tries++; tries == 1 {
			return nil, errors.New("smtp busy")
		}
		return "sent", nil
	}), nil)
	added, _ := k.Queue("mail").Add(context.Background(), "send", nil,
		&drover.JobOptions{Attempts: 2, Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: time.Hour}})

	job := k.WaitState("mail", added.Job.ID, drover.StateDelayed)
	fmt.Println(job.Timeline[0].Outcome, job.Timeline[0].Backoff)
	k.Advance(time.Hour)
	job = k.WaitState("mail", added.Job.ID, drover.StateCompleted)
	fmt.Println(job.AttemptsMade, string(job.ReturnValue))
	// Output:
	// retry-delayed 1h0m0s
	// 2 "sent"
}
