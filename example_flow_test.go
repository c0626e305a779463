package drover_test

import (
	"context"
	"fmt"
	"sort"

	"github.com/seed40057009/drover"
)

// A flow: a report that runs once its two parts, in another queue, are
// done, and reads their results. The whole tree is stored in one atomic
// step; Node BullMQ workers can run any of its jobs.
func ExampleFlowProducer() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()

	fp, err := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Prefix: prefix})
	if err != nil {
		panic(err)
	}
	tree, err := fp.Add(ctx, drover.FlowJob{
		Name: "report", QueueName: "reports", Opts: &drover.JobOptions{JobID: "report-7"},
		Children: []drover.FlowJob{
			{Name: "part", QueueName: "parts", Data: map[string]int{"page": 1}},
			{Name: "part", QueueName: "parts", Data: map[string]int{"page": 2},
				Opts: &drover.JobOptions{ParentPolicy: drover.FailParent}},
		},
	})
	if err != nil {
		panic(err)
	}
	state, _ := tree.Job.GetState(ctx)
	fmt.Println(tree.Job.ID, "is", state, "for", len(tree.Children), "parts")

	done := make(chan string, 1)
	parts, _ := drover.NewWorker(rdb, "parts", drover.ProcessorFunc(func(_ context.Context, job *drover.Job) (any, error) {
		return job.Data, nil
	}), &drover.WorkerOptions{Prefix: prefix})
	reports, _ := drover.NewWorker(rdb, "reports", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		values, err := job.GetChildrenValues(ctx) // child job key -> return value
		if err != nil {
			return nil, err
		}
		var pages []string
		for _, v := range values {
			pages = append(pages, string(v))
		}
		sort.Strings(pages)
		done <- fmt.Sprint(pages)
		return len(pages), nil
	}), &drover.WorkerOptions{Prefix: prefix})
	_ = parts.Start(ctx)
	_ = reports.Start(ctx)
	fmt.Println("report saw", <-done)
	_ = reports.Close(ctx)
	_ = parts.Close(ctx)
	// Output:
	// report-7 is waiting-children for 2 parts
	// report saw [{"page":1} {"page":2}]
}

// A processor that fans out at run time: it adds children to its own job,
// parks the job in waiting-children until they are done, and runs again to
// collect their results (BullMQ's moveToWaitingChildren); when they were
// done before it could park, it collects them at once.
func ExampleJob_MoveToWaitingChildren() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()
	q, _ := drover.NewQueue(rdb, "crawl", &drover.QueueOptions{Prefix: prefix})
	fp, _ := drover.NewFlowProducer(rdb, &drover.FlowProducerOptions{Prefix: prefix})

	result := make(chan string, 1)
	crawl := drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		if job.Name == "page" {
			return "fetched " + job.ID, nil
		}
		values, err := job.GetChildrenValues(ctx)
		if err != nil {
			return nil, err
		}
		if len(values) == 0 { // first run: fan out, then wait
			parent := job.Ref()
			_, err := fp.AddBulk(ctx, []drover.FlowJob{
				{Name: "page", QueueName: "crawl", Opts: &drover.JobOptions{JobID: "page-a"}, Parent: &parent},
				{Name: "page", QueueName: "crawl", Opts: &drover.JobOptions{JobID: "page-b"}, Parent: &parent},
			})
			if err != nil {
				return nil, err
			}
			moved, err := job.MoveToWaitingChildren(ctx, nil)
			if err != nil {
				return nil, err
			}
			if moved {
				return nil, drover.ErrWaitingChildren
			}
			// Not moved: the children were done before the job could
			// park (the other slot ran them), so collect them now.
			if values, err = job.GetChildrenValues(ctx); err != nil {
				return nil, err
			}
		}
		result <- fmt.Sprintf("%s collected %d pages", job.ID, len(values))
		return len(values), nil
	})
	w, _ := drover.NewWorker(rdb, "crawl", crawl, &drover.WorkerOptions{Prefix: prefix, Concurrency: 2})
	_ = w.Start(ctx)
	_, _ = q.Add(ctx, "site", nil, &drover.JobOptions{JobID: "site-1"})
	fmt.Println(<-result)
	_ = w.Close(ctx)
	// Output:
	// site-1 collected 2 pages
}
