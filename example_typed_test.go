package drover_test

import (
	"context"
	"fmt"

	"github.com/seed40057009/drover"
)

// Welcome is a typed job: its Kind is the job's name, its fields the data.
type Welcome struct {
	To   string `json:"to"`
	Lang string `json:"lang"`
}

func (Welcome) Kind() string { return "welcome" }

// Typed jobs: AddArgs stores Welcome as the job's data (as Node's
// JSON.stringify would), and one worker routes each job by name to the
// function registered with Work, decoding the data into the function's
// type. A payload that does not decode fails for good, naming the field.
func ExampleWork() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()
	q, _ := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})

	var kinds drover.Kinds
	drover.Work(&kinds, func(ctx context.Context, job *drover.Job, w Welcome) (any, error) {
		return "welcome sent to " + w.To + " in " + w.Lang, nil
	})
	w, _ := drover.NewWorker(rdb, "mail", &kinds, &drover.WorkerOptions{Prefix: prefix})
	_ = w.Start(ctx)
	defer w.Close(ctx)

	good, _ := q.AddArgs(ctx, Welcome{To: "ada@example.com", Lang: "en"}, nil)
	fmt.Println(good.Job.Name, string(good.Job.Data))
	bad, _ := q.Add(ctx, "welcome", map[string]any{"to": 42}, nil) // a producer that got it wrong

	waitForState(q, good.Job.ID, drover.StateCompleted)
	waitForState(q, bad.Job.ID, drover.StateFailed)
	done, _ := q.GetJob(ctx, good.Job.ID)
	failed, _ := q.GetJob(ctx, bad.Job.ID)
	fmt.Println(string(done.ReturnValue))
	fmt.Println(failed.FailedReason)
	// Output:
	// welcome {"to":"ada@example.com","lang":"en"}
	// "welcome sent to ada@example.com in en"
	// invalid job data: job 2 ("welcome"): data does not decode as drover_test.Welcome: field "to" is a JSON number, want string
}
