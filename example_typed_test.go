package drover_test

import (
	"context"
	"fmt"
	"time"

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

// Payout is a kind that carries its own options: every AddArgs of it gets
// three attempts with backoff, a one-minute timeout, and a deduplication id
// made from its account, so a second payout to the same account while the
// first is pending is not stored.
type Payout struct {
	Account string `json:"account"`
	Cents   int    `json:"cents"`
}

func (Payout) Kind() string { return "payout" }

func (p Payout) JobOptions() *drover.JobOptions {
	return &drover.JobOptions{
		Attempts:      3,
		Backoff:       &drover.Backoff{Type: drover.BackoffExponential, Delay: time.Second},
		Timeout:       time.Minute,
		Deduplication: &drover.Deduplication{ID: "payout:" + p.Account},
	}
}

// Options that belong to a kind of job (River's InsertOpts): AddArgs takes
// the fields its own options leave unset from the kind's JobOptions.
func ExampleJobArgsWithOptions() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()
	q, _ := drover.NewQueue(rdb, "payouts", &drover.QueueOptions{Prefix: prefix})

	first, _ := q.AddArgs(ctx, Payout{Account: "ada", Cents: 500}, nil)
	second, _ := q.AddArgs(ctx, Payout{Account: "ada", Cents: 700}, nil)
	urgent, _ := q.AddArgs(ctx, Payout{Account: "bob", Cents: 100}, &drover.JobOptions{Attempts: 10})
	fmt.Println(first.Outcome, first.Job.Opts.Attempts, first.Job.Opts.Timeout, first.Job.Opts.Deduplication.ID)
	fmt.Println(second.Outcome, second.Job.ID == first.Job.ID)
	fmt.Println(urgent.Outcome, urgent.Job.Opts.Attempts, urgent.Job.Opts.Backoff.Type)
	// Output:
	// created 3 1m0s payout:ada
	// deduplicated true
	// created 10 exponential
}

// Export is a kind whose worker bounds each attempt and backs off between
// retries, River's Worker.Timeout and NextRetry.
type Export struct {
	Report string `json:"report"`
}

func (Export) Kind() string { return "export" }

// WorkWith registers a kind with options for how this worker runs it: each
// attempt may take 30 s, and a job that carries no backoff of its own waits
// a minute per failed attempt before the next (BullMQ's default would retry
// at once).
func ExampleWorkWith() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()
	q, _ := drover.NewQueue(rdb, "exports", &drover.QueueOptions{Prefix: prefix})

	var kinds drover.Kinds
	drover.WorkWith(&kinds, func(ctx context.Context, job *drover.Job, e Export) (any, error) {
		return nil, fmt.Errorf("report %s: storage unavailable", e.Report)
	}, &drover.KindOptions{
		Timeout: 30 * time.Second,
		Backoff: func(attemptsMade int, _ string, _ error, _ *drover.Job) time.Duration {
			return time.Duration(attemptsMade) * time.Minute
		},
	})
	w, _ := drover.NewWorker(rdb, "exports", &kinds, &drover.WorkerOptions{Prefix: prefix})
	_ = w.Start(ctx)
	defer w.Close(ctx)

	res, _ := q.AddArgs(ctx, Export{Report: "q3"}, &drover.JobOptions{Attempts: 5})
	waitForState(q, res.Job.ID, drover.StateDelayed)
	job, _ := q.GetJob(ctx, res.Job.ID)
	fmt.Println(job.AttemptsMade, job.Delay, job.FailedReason)
	// Output:
	// 1 1m0s report q3: storage unavailable
}

// KindOf answers the kind Work registers a JobArgs type under, the name its
// jobs are added with, for a pointer type too; a Kind that cannot be asked of
// a zero value is an error instead of a panic.
func ExampleKindOf() {
	kind, err := drover.KindOf[Welcome]()
	fmt.Println(kind, err)
	kind, err = drover.KindOf[*Payout]()
	fmt.Println(kind, err)
	_, err = drover.KindOf[drover.JobArgs]()
	fmt.Println(err != nil)
	// Output:
	// welcome <nil>
	// payout <nil>
	// true
}
