package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/bigqueue"
)

// loadBullLayout writes -n jobs in BullMQ's layout (internal/testkit/bigqueue).
// Only drover and BullMQ share this layout (prefix "bull", queue "bench").
func loadBullLayout(ctx context.Context, cfg config, layout bigqueue.Layout) error {
	if cfg.Impl != "drover" {
		return fmt.Errorf("%s: n/a (the loader writes BullMQ's layout)", cfg.Impl)
	}
	rdb := redis.NewClient(&redis.Options{Addr: cfg.RedisAddr, ReadTimeout: time.Minute})
	defer rdb.Close()
	return bigqueue.Load(ctx, rdb, droverPrefix+":"+queueName+":", cfg.N, layout)
}

// scenarioSeedCompleted stores -n completed jobs (the "1M kept completed"
// backlog). Node's peer runs the same script for BullMQ.
func scenarioSeedCompleted(ctx context.Context, cfg config, _ impl) (result, error) {
	t0 := time.Now()
	err := loadBullLayout(ctx, cfg, bigqueue.Completed)
	return rateResult(cfg.N, time.Since(t0), 0), err
}

// scenarioBigQueue loads a queue of -n jobs (bigqueue.Mixed) and times, over
// real HTTP and the real CLI binary, what an operator runs against it: the
// dashboard's overview API, the storm analytics (delayed stats) API, the
// failed jobs' first page (API and `drover jobs --state failed`) and
// `drover queues`. Each is run bigqueueReps times; Extra holds the medians
// in ms. The CLI figures include starting the process and are cold (no
// Inspector alive, no published queue list).
func scenarioBigQueue(ctx context.Context, cfg config, _ impl) (result, error) {
	if err := loadBullLayout(ctx, cfg, bigqueue.Mixed); err != nil {
		return result{}, err
	}
	if cfg.DroverBin == "" {
		return result{}, errors.New("bigqueue needs -drover-bin")
	}
	rdb := redis.NewClient(&redis.Options{Addr: cfg.RedisAddr})
	defer rdb.Close()
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: droverPrefix})
	if err != nil {
		return result{}, err
	}
	defer func() { _ = ins.Close(context.WithoutCancel(ctx)) }()
	h, err := dashboard.New(ins, nil)
	if err != nil {
		return result{}, err
	}
	defer func() { _ = h.Close(context.WithoutCancel(ctx)) }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return result{}, err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	url := "http://" + ln.Addr().String()
	hc := &http.Client{Timeout: time.Minute}
	get := func(path string) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+path, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s", path, resp.Status)
		}
		return nil
	}
	// The CLI rows are cold, as `drover queues` run alone: the dashboard
	// is closed first (its discovery loop no longer publishes a list) and
	// the published list is deleted before each call, so the CLI reads the
	// queue registry the dashboard's first scan seeded.
	closeDashboard := func() error {
		if err := h.Close(ctx); err != nil {
			return err
		}
		if err := ins.Close(ctx); err != nil {
			return err
		}
		return rdb.Del(ctx, droverPrefix+"::queues").Err()
	}
	cli := func(args ...string) func() error {
		return func() error {
			if err := rdb.Del(ctx, droverPrefix+"::queues").Err(); err != nil {
				return err
			}
			argv := append(append([]string{}, args...), "--redis", "redis://"+cfg.RedisAddr, "--prefix", droverPrefix)
			out, err := exec.CommandContext(ctx, cfg.DroverBin, argv...).CombinedOutput()
			if err != nil {
				return fmt.Errorf("drover %v: %w: %s", args, err, out)
			}
			return nil
		}
	}
	if err := get("/api/overview"); err != nil { // discovery's first scan, off the clock
		return result{}, err
	}
	cpu0 := cpuMicros()
	t0 := time.Now()
	res := result{Extra: map[string]float64{}}
	for _, c := range []struct {
		name string
		do   func() error
	}{
		{"api_overview", func() error { return get("/api/overview") }},
		{"api_storm", func() error { return get("/api/queues/" + queueName + "/delayed") }},
		{"api_failed_page", func() error { return get("/api/queues/" + queueName + "/jobs?state=failed") }},
		{"cli_queues", cli("queues")},
		{"cli_jobs_failed", cli("jobs", "--state", "failed", queueName)},
	} {
		if c.name == "cli_queues" {
			if err := closeDashboard(); err != nil {
				return result{}, err
			}
		}
		var ms []float64
		for range bigqueueReps {
			t := time.Now()
			if err := c.do(); err != nil {
				return result{}, err
			}
			ms = append(ms, float64(time.Since(t).Microseconds())/1e3)
		}
		slices.Sort(ms)
		res.Extra[c.name+"_ms"] = ms[len(ms)/2]
	}
	res.Seconds = time.Since(t0).Seconds()
	res.CPUus = float64(cpuMicros() - cpu0)
	res.RSSkb = rssKB()
	res.Note = "jobs: " + strconv.Itoa(cfg.N)
	return res, nil
}

const bigqueueReps = 9
