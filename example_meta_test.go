package drover_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/seed40057009/drover"
)

func ExampleQueue_GetMeta() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()
	q, _ := drover.NewQueue(rdb, "imports", &drover.QueueOptions{Prefix: prefix})

	_ = q.SetGlobalConcurrency(ctx, 1)
	_, _ = q.Add(ctx, "import", nil, nil)
	meta, _ := q.GetMeta(ctx)
	maxed, _ := q.IsMaxed(ctx)
	// No Node BullMQ Queue opened this queue, so no version is recorded.
	version, _ := q.GetVersion(ctx)
	fmt.Printf("cap %d, paused %v, maxed %v, version %q\n", meta.Concurrency, meta.Paused, maxed, version)

	text, _ := q.ExportPrometheusMetrics(ctx, map[string]string{"env": "prod"})
	fmt.Println(text[:strings.Index(text, "\n# HELP bullmq_job_completed_total")])
	// Output:
	// cap 1, paused false, maxed false, version ""
	// # HELP bullmq_job_count Number of jobs in the queue by state
	// # TYPE bullmq_job_count gauge
	// bullmq_job_count{queue="imports", state="active", env="prod"} 0
	// bullmq_job_count{queue="imports", state="completed", env="prod"} 0
	// bullmq_job_count{queue="imports", state="delayed", env="prod"} 0
	// bullmq_job_count{queue="imports", state="failed", env="prod"} 0
	// bullmq_job_count{queue="imports", state="prioritized", env="prod"} 0
	// bullmq_job_count{queue="imports", state="waiting", env="prod"} 1
	// bullmq_job_count{queue="imports", state="waiting-children", env="prod"} 0
}

func ExampleQueue_RemoveOrphanedJobs() {
	ctx := context.Background()
	rdb, prefix := exampleClient()
	defer rdb.Close()
	q, _ := drover.NewQueue(rdb, "legacy", &drover.QueueOptions{Prefix: prefix})

	// A one-time clean-up after BullMQ 5.66's retention bug: remove in
	// rounds of at most 10,000 jobs until a round removes fewer.
	total := 0
	for {
		n, err := q.RemoveOrphanedJobs(ctx, 1000, 10000)
		if err != nil {
			fmt.Println(err)
			return
		}
		total += n
		if n < 10000 {
			break
		}
	}
	fmt.Println("removed", total)
	// Output: removed 0
}
