package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/embedredis"
	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/metricset"
	"github.com/seed40057009/drover/internal/redisclone"
)

func init() {
	commands["demo"] = commandInfo{
		summary: "run demo queues with jobs that succeed, retry, stall and fail, and the dashboard (embedded Redis unless --redis)",
		make:    func(m *Main) command { return &demoCmd{out: m.Stdout} },
	}
}

type demoCmd struct {
	out io.Writer
}

// stallQueue is the demo's second queue, whose worker loses its network for
// a while on each job's first attempt, so the job stalls and is recovered.
const stallQueue = "imports"

func (c *demoCmd) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(c.out)
	redisURL := fs.String("redis", os.Getenv("DROVER_REDIS_URL"), "Redis URL (redis://host:port/db); empty = embedded engine (env DROVER_REDIS_URL)")
	hidePassword(fs, "redis")
	queueName := fs.String("queue", "demo", "queue name")
	prefix := fs.String("prefix", "", "key prefix; default: bull on the embedded engine, a new drover-demo-<random> on a real Redis")
	duration := durationFlag(fs, "for", 0, "stop after this long (0 = until Ctrl-C)")
	dashAddr := fs.String("dashboard", "127.0.0.1:7373", `dashboard address (loopback; port 0 picks one; "off" = no dashboard)`)
	verbose := fs.Bool("v", false, "log every job")
	fs.Usage = func() {
		fmt.Fprintln(c.out, "Usage: drover demo [--redis URL] [--prefix P] [--queue NAME] [--for D] [--dashboard ADDR|off] [-v]\n\n"+
			"Runs demo queues with jobs that succeed, retry, stall and fail, and the dashboard. Without --redis it runs on an\n"+
			"embedded engine; on a real Redis its queues get a prefix of their own and it refuses to touch existing queues.")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usagef("demo: %v", err)
	}
	if *duration < 0 {
		return usagef("--for must not be negative (0 = until Ctrl-C), got %s", *duration)
	}
	// Checked before the engine starts or Redis is opened: mistakes in
	// the command line are usage errors (exit 2). A bad --queue exited 1
	// after starting, and --queue imports ran both workers on one queue,
	// every event printed twice.
	if err := keys.ValidateName(*queueName); err != nil {
		return usagef("--queue: %v", err)
	}
	if *queueName == stallQueue {
		return usagef("--queue %q is the demo's second queue (its stalling worker's): pick another name", stallQueue)
	}
	if *dashAddr != "off" {
		host, _, err := net.SplitHostPort(*dashAddr)
		if err != nil {
			return usagef("--dashboard %q: want host:port (e.g. 127.0.0.1:7373), or off: %v", *dashAddr, err)
		}
		if !dashboard.IsLoopback(host) {
			// The demo's dashboard has no sign-in and no flags for one:
			// the dashboard's "configure users (--token/--user)" pointed
			// at flags the demo does not have.
			return &usageError{msg: fmt.Sprintf("--dashboard %q: the demo's dashboard has no sign-in (whoever reaches it is admin), so it listens on loopback only: "+
				"use 127.0.0.1:PORT, or serve the demo's queues with drover dashboard and its --token or --user", *dashAddr), err: dashboard.ErrInsecureBind}
		}
	}
	// Redis is opened before --for's clock starts: its connect check
	// (up to 10 s of its own) ran under --for, so a short --for (or a
	// connect slower than it) said "cannot reach Redis ...: context
	// deadline exceeded" of a Redis that answered.
	rdb, where, closeRedis, err := openRedis(ctx, *redisURL)
	if err != nil {
		return err
	}
	defer closeRedis()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	fmt.Fprintf(c.out, "drover demo: %s\n", where)
	if *prefix == "" {
		// On a real Redis the demo's queues get a prefix of their own: its
		// stalling worker must never take someone's real jobs.
		*prefix = drover.PrefixDefault
		if *redisURL != "" {
			*prefix = fmt.Sprintf("drover-demo-%06x", rand.Uint32()&0xffffff)
		}
	}
	fmt.Fprintf(c.out, "queues %q and %q under prefix %q\n", *queueName, stallQueue, *prefix)

	ins, err := inspect.New(rdb, &inspect.Options{Prefix: *prefix})
	if err != nil {
		return err
	}
	defer func() { _ = ins.Close(context.WithoutCancel(ctx)) }()
	if *redisURL != "" {
		for _, name := range []string{*queueName, stallQueue} {
			ok, err := ins.Exists(ctx, name)
			if err != nil {
				return fmt.Errorf("demo: %w", err)
			}
			if ok {
				return usagef("demo: queue %q already exists under prefix %q at %s: the demo adds jobs to its queues and runs a worker that stalls on purpose, "+
					"so it does not touch existing queues; leave out --prefix (the demo then picks a new one) or pick another", name, *prefix, redactURL(*redisURL))
			}
		}
	}
	// The series of metrics.NewRegistry plus the worker metrics, served
	// without client_golang (internal/metricset).
	workerMetrics := metricset.NewWorkers(nil)
	metricsHandler := metricset.Handler(metricset.QueueSource(ins, metricset.ReadOptions{}, 0), metricset.Runtime, workerMetrics.Families)
	if *dashAddr != "off" {
		srv, err := demoDashboard(ctx, ins, *dashAddr, metricsHandler)
		if err != nil {
			return fmt.Errorf("--dashboard %q: %w", *dashAddr, err)
		}
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			_ = srv.Close(cctx)
		}()
		fmt.Fprintf(c.out, "dashboard: %s (no sign-in on loopback: you are admin; metrics at %smetrics)\n", srv.URL(), srv.URL())
	}

	q, err := drover.NewQueue(rdb, *queueName, &drover.QueueOptions{Prefix: *prefix})
	if err != nil {
		return err
	}
	imports, err := drover.NewQueue(rdb, stallQueue, &drover.QueueOptions{Prefix: *prefix})
	if err != nil {
		return err
	}
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(c.out, &slog.HandlerOptions{Level: level}))
	var mu sync.Mutex
	flaky := map[string]int{}
	proc := drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		select {
		case <-time.After(time.Duration(20+rand.IntN(80)) * time.Millisecond):
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
		_, _ = job.Log(ctx, fmt.Sprintf("attempt %d of %d on %s", job.AttemptsMade+1, max(job.Opts.Attempts, 1), job.Name))
		switch job.Name {
		case "flaky":
			mu.Lock()
			flaky[job.ID]++
			n := flaky[job.ID]
			mu.Unlock()
			if n < 3 {
				return nil, fmt.Errorf("upstream timeout (attempt %d)", n)
			}
		case "slow-retry":
			if job.AttemptsMade < 2 {
				return nil, fmt.Errorf("rate limited by the partner API (attempt %d)", job.AttemptsMade+1)
			}
		case "doomed":
			return nil, errors.New("card declined")
		}
		return map[string]any{"ok": true, "job": job.Name}, nil
	})
	w, err := drover.NewWorker(rdb, *queueName, proc, &drover.WorkerOptions{
		Prefix: *prefix, Concurrency: 4, Name: "demo-worker", Logger: logger,
		Hooks: workerMetrics.Hooks(*queueName),
	})
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	closeStalling, err := stallingWorker(ctx, rdb, *prefix, workerMetrics.Hooks(stallQueue))
	if err != nil {
		closeWorker(ctx, w)
		return err
	}
	// Both workers close at once: with Redis gone each may wait out its
	// deadline, and a Ctrl-C should not wait for the two in turn.
	defer func() {
		var closing sync.WaitGroup
		closing.Go(func() { closeWorker(ctx, w) })
		closing.Go(closeStalling)
		closing.Wait()
	}()

	var wg sync.WaitGroup
	for _, name := range []string{*queueName, stallQueue} {
		// The whole stream: the demo's queues are new (the embedded engine
		// starts empty; on a real Redis existing queues are refused above),
		// so nothing in it is older than this run.
		events, err := drover.NewQueueEvents(rdb, name, &drover.QueueEventsOptions{Prefix: *prefix, LastEventID: "0"})
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = events.Run(ctx, func(ev drover.Event) error {
				c.printEvent(name, ev)
				return nil
			})
		}()
	}

	fmt.Fprintln(c.out, "adding jobs: 'ok' succeed, 'flaky' fail twice then succeed (exponential backoff), 'slow-retry' wait 10s and 20s between attempts,")
	fmt.Fprintln(c.out, "'doomed' fail for good, and in queue 'imports' each job stalls once (its worker loses Redis) and is recovered")
	retry := &drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: drover.BackoffExponential, Delay: 200 * time.Millisecond}}
	slow := &drover.JobOptions{Attempts: 4, Backoff: &drover.Backoff{Type: drover.BackoffExponential, Delay: 10 * time.Second, Jitter: 0.2}}
	add := func(round int) error {
		for i := range 3 {
			if _, err := q.Add(ctx, "ok", map[string]int{"round": round, "n": i}, nil); err != nil {
				return err
			}
		}
		if _, err := q.Add(ctx, "flaky", map[string]int{"round": round}, retry); err != nil {
			return err
		}
		if round%2 == 1 {
			if _, err := q.Add(ctx, "slow-retry", map[string]int{"round": round}, slow); err != nil {
				return err
			}
			if _, err := imports.Add(ctx, "import", map[string]any{"round": round, "file": fmt.Sprintf("orders-%03d.csv", round)}, nil); err != nil {
				return err
			}
		}
		_, err := q.Add(ctx, "doomed", map[string]int{"round": round}, &drover.JobOptions{Attempts: 2})
		return err
	}
	ticker := time.NewTicker(5 * time.Second)
	defer ticker.Stop()
	for round := 1; ; round++ {
		if err := add(round); err != nil {
			if ctx.Err() != nil {
				break
			}
			return err
		}
		select {
		case <-ctx.Done():
		case <-ticker.C:
			counts, err := q.GetJobCounts(ctx) // a Ctrl-C ends a read that Redis does not answer
			if err == nil {
				fmt.Fprintf(c.out, "counts: waiting=%d active=%d delayed=%d completed=%d failed=%d\n",
					counts[drover.StateWaiting], counts[drover.StateActive], counts[drover.StateDelayed],
					counts[drover.StateCompleted], counts[drover.StateFailed])
			}
			continue
		}
		break
	}
	wg.Wait()
	if *redisURL != "" {
		// Nothing of it is removed: say where it is, so it can be looked
		// at, or deleted.
		fmt.Fprintf(c.out, "drover demo: stopped; its jobs stay in Redis under prefix %q (drover dashboard --prefix %s, with the same --redis, shows them)\n", *prefix, *prefix)
		return nil
	}
	fmt.Fprintln(c.out, "drover demo: stopped")
	return nil
}

func (c *demoCmd) printEvent(queue string, ev drover.Event) {
	switch ev.Name {
	case drover.EventCompleted:
		fmt.Fprintf(c.out, "  %-8s completed job %-4s -> %s\n", queue, ev.JobID, ev.ReturnValue)
	case drover.EventFailed:
		fmt.Fprintf(c.out, "  %-8s failed    job %-4s: %s (for good)\n", queue, ev.JobID, ev.FailedReason)
	case drover.EventDelayed:
		fmt.Fprintf(c.out, "  %-8s delayed   job %-4s until %s\n", queue, ev.JobID, ev.DelayUntil.Format("15:04:05.000"))
	case drover.EventStalled:
		fmt.Fprintf(c.out, "  %-8s stalled   job %-4s: its worker stopped renewing the lock; back to wait\n", queue, ev.JobID)
	case drover.EventRetriesExhausted:
		fmt.Fprintf(c.out, "  %-8s retries exhausted for job %s after %d attempts\n", queue, ev.JobID, ev.AttemptsMade)
	}
}

// demoDashboard starts the dashboard on addr, or on a free port when addr's
// port is taken. Anyone on this machine is admin: it listens on loopback
// only. Any other error is returned: a non-loopback or malformed address
// served on a random port instead, unsaid.
func demoDashboard(ctx context.Context, ins *inspect.Inspector, addr string, metricsHandler http.Handler) (*dashboard.Server, error) {
	opts := &dashboard.Options{AnonymousRole: dashboard.RoleAdmin, Metrics: metricsHandler}
	srv, err := serveDashboard(ctx, ins, addr, opts)
	if errors.Is(err, syscall.EADDRINUSE) {
		return serveDashboard(ctx, ins, "127.0.0.1:0", opts)
	}
	return srv, err
}

func closeWorker(ctx context.Context, w *drover.Worker) {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = w.Close(cctx)
}

// partition is a go-redis hook that fails every command while on: the
// network between a worker and Redis is down.
type partition struct{ on atomic.Bool }

var errPartition = errors.New("demo: network partition")

func (p *partition) DialHook(next redis.DialHook) redis.DialHook { return next }

func (p *partition) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if p.on.Load() {
			cmd.SetErr(errPartition)
			return errPartition
		}
		return next(ctx, cmd)
	}
}

func (p *partition) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if p.on.Load() {
			for _, cmd := range cmds {
				cmd.SetErr(errPartition)
			}
			return errPartition
		}
		return next(ctx, cmds)
	}
}

// stallingWorker serves the imports queue over its own connection. On a
// job's first attempt it loses Redis for longer than its lock lasts: the lock
// expires, the result cannot be written, and the stalled checker moves the
// job back to wait (stc 1). The second attempt completes.
func stallingWorker(ctx context.Context, rdb redis.UniversalClient, prefix string, hooks *drover.WorkerHooks) (func(), error) {
	base, ok := rdb.(*redis.Client)
	if !ok {
		return nil, errors.New("demo: the stalling worker needs a single-node client")
	}
	own := redisclone.Client(base, nil)
	part := &partition{}
	own.AddHook(part)
	proc := drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		if job.StalledCount == 0 {
			part.on.Store(true)
			select {
			case <-time.After(3 * time.Second):
			case <-ctx.Done():
			}
			part.on.Store(false)
			return "imported (but the worker lost its lock meanwhile)", nil
		}
		time.Sleep(50 * time.Millisecond)
		return map[string]any{"imported": true, "after_stalls": job.StalledCount}, nil
	})
	w, err := drover.NewWorker(own, stallQueue, proc, &drover.WorkerOptions{
		Prefix: prefix, Name: "flaky-network-worker", LockDuration: 1500 * time.Millisecond,
		StalledInterval: time.Second, MaxStalledCount: 2, Logger: slog.New(slog.DiscardHandler),
		Hooks: hooks,
	})
	if err != nil {
		_ = own.Close()
		return nil, err
	}
	if err := w.Start(ctx); err != nil {
		_ = own.Close()
		return nil, err
	}
	return func() {
		part.on.Store(false)
		closeWorker(ctx, w)
		_ = own.Close()
	}, nil
}

// openRedis connects to url, or starts the embedded engine when url is "".
func openRedis(ctx context.Context, url string) (redis.UniversalClient, string, func(), error) {
	if url == "" {
		srv, err := embedredis.Start()
		if err != nil {
			return nil, "", nil, err
		}
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		return rdb, fmt.Sprintf("no --redis given: running on an embedded Redis-compatible engine (miniredis, in this process) at %s", srv.Addr()),
			func() { _ = rdb.Close(); srv.Close() }, nil
	}
	opt, err := parseRedisURL(url)
	if err != nil {
		return nil, "", nil, badRedisURL(url, err)
	}
	rdb := redis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		_ = rdb.Close()
		return nil, "", nil, unreachable(place{addr: opt.Addr, db: opt.DB}, err)
	}
	return rdb, "using Redis at " + opt.Addr, func() { _ = rdb.Close() }, nil
}
