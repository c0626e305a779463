package drover_test

import (
	"context"
	"fmt"
	"time"

	"github.com/seed40057009/drover"
)

func ExampleJob_RemoveDeduplicationKey() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()
	q, _ := drover.NewQueue(rdb, "sync", &drover.QueueOptions{Prefix: prefix})

	// One sync per user an hour: a second request within the hour is
	// deduplicated against the first job.
	once := &drover.JobOptions{Deduplication: &drover.Deduplication{ID: "user-7", TTL: time.Hour}}
	first, _ := q.Add(ctx, "sync", nil, once)
	again, _ := q.Add(ctx, "sync", nil, once)
	holder, _ := q.GetDeduplicationJobID(ctx, "user-7")
	fmt.Println(again.Outcome, "against job", holder)

	// The user changed their settings: let the next request through now.
	// The job frees the id only while it still holds it.
	freed, _ := first.Job.RemoveDeduplicationKey(ctx)
	next, _ := q.Add(ctx, "sync", nil, once)
	fmt.Println("freed:", freed, "next add:", next.Outcome)
	// Output:
	// deduplicated against job 1
	// freed: true next add: created
}

func ExampleQueue_GetCountsPerPriority() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()
	q, _ := drover.NewQueue(rdb, "renders", &drover.QueueOptions{Prefix: prefix})

	for _, p := range []int{0, 0, 1, 5, 5, 5} {
		_, _ = q.Add(ctx, "render", nil, &drover.JobOptions{Priority: p})
	}
	counts, _ := q.GetCountsPerPriority(ctx, 0, 1, 5, 9)
	fmt.Println(counts[0], counts[1], counts[5], counts[9])
	// Output: 2 1 3 0
}
