package metrics_test

import (
	"net/http"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/metrics"
)

// instrument is the package doc's snippet (compiled, not run: it registers
// on http.DefaultServeMux).
func instrument(ins *inspect.Inspector, rdb redis.UniversalClient, proc drover.Processor) *drover.Worker {
	reg, _ := metrics.NewRegistry(ins, nil)
	w, _ := drover.NewWorker(rdb, "mail", proc, &drover.WorkerOptions{Hooks: metrics.WorkerHooks(reg, "mail")})
	http.Handle("/metrics", metrics.Handler(reg))
	return w
}

// A worker's hooks and the queues' gauges on one registry, served at
// /metrics.
func ExampleWorkerHooks() {
	_ = instrument
}
