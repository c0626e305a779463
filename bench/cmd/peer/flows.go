package main

// Issue 16 item 7's workloads that only some implementations have: flows
// (a parent job run after its children) and job schedulers (a job made
// again and again on a fixed interval). An implementation takes part by
// implementing flowImpl or schedulerImpl; the orchestrator leaves the
// others out of these steps (bench/README.md says why for each).

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// flowImpl adds flows: parent k (payload I = -(k+1)) with children
// children (payload I = k*children + c), all in the bench queue.
type flowImpl interface {
	AddFlow(ctx context.Context, k, children int) error
}

// schedulerImpl runs one job scheduler due every `every` until n of its
// jobs ran, then removes it, and returns each run's lateness: processor
// start - the run's due time, in ms.
type schedulerImpl interface {
	RunScheduler(ctx context.Context, every time.Duration, n int) ([]float64, error)
}

// schedulerRunDue is a scheduler run's due time, from its job id
// "repeat:<scheduler id>:<due ms>" (BullMQ's layout; the job's delay is
// reset to 0 once it is promoted, so it cannot tell).
func schedulerRunDue(id string) (time.Time, error) {
	i := strings.LastIndexByte(id, ':')
	ms, err := strconv.ParseInt(id[i+1:], 10, 64)
	if i < 0 || err != nil {
		return time.Time{}, fmt.Errorf("scheduler run %q: no due time in its id", id)
	}
	return time.UnixMilli(ms), nil
}

var errNotSupported = errors.New("scenario not supported by this implementation")

// scenarioFlow starts a worker at concurrency -c, then adds -n flows of
// -children children each from one producer, and ends when every parent
// ran and the backend shows nothing left to run. Rate is flows per second,
// adding included.
func scenarioFlow(ctx context.Context, cfg config, im impl) (result, error) {
	fi, ok := im.(flowImpl)
	if !ok {
		return result{}, errNotSupported
	}
	n := int64(cfg.N)
	var parents atomic.Int64
	all := make(chan struct{})
	h := func(ctx context.Context, p payload, attempt int) error {
		if p.I < 0 && parents.Add(1) == n {
			close(all)
		}
		return nil
	}
	cpu0 := cpuMicros()
	t0 := time.Now()
	if err := im.Start(ctx, h); err != nil {
		return result{}, err
	}
	defer stop(im)
	for k := range cfg.N {
		if err := fi.AddFlow(ctx, k, cfg.Children); err != nil {
			return result{}, fmt.Errorf("add flow %d: %w", k, err)
		}
	}
	if err := waitAll(ctx, all, &parents, cfg.N); err != nil {
		return result{}, err
	}
	if err := waitDrained(ctx, im, cfg.N*(cfg.Children+1)); err != nil {
		return result{}, err
	}
	return rateResult(cfg.N, time.Since(t0), cpuMicros()-cpu0), nil
}

// scenarioScheduler runs one scheduler every -every-ms for -n runs and
// reports the runs' lateness (p50, p99, max) and the runs per second.
func scenarioScheduler(ctx context.Context, cfg config, im impl) (result, error) {
	si, ok := im.(schedulerImpl)
	if !ok {
		return result{}, errNotSupported
	}
	cpu0 := cpuMicros()
	t0 := time.Now()
	late, err := si.RunScheduler(ctx, cfg.Every, cfg.N)
	if err != nil {
		return result{}, err
	}
	res := rateResult(cfg.N, time.Since(t0), cpuMicros()-cpu0)
	res.P50ms, res.P99ms, res.MaxMs = percentiles(late)
	return res, nil
}
