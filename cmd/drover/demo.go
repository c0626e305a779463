package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/embedredis"
)

func init() {
	commands["demo"] = commandInfo{
		summary: "run a demo queue with jobs that succeed, retry and fail (embedded Redis unless --redis)",
		make:    func(m *Main) command { return &demoCmd{out: m.Stdout} },
	}
}

type demoCmd struct {
	out io.Writer
}

func (c *demoCmd) Run(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(c.out)
	redisURL := fs.String("redis", "", "Redis URL (redis://host:port/db); empty = embedded engine")
	queueName := fs.String("queue", "demo", "queue name")
	prefix := fs.String("prefix", drover.PrefixDefault, "key prefix")
	duration := fs.Duration("for", 0, "stop after this long (0 = until Ctrl-C)")
	verbose := fs.Bool("v", false, "log every job")
	if err := fs.Parse(args); err != nil {
		return usagef("demo: %v", err)
	}
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}

	rdb, where, closeRedis, err := openRedis(*redisURL)
	if err != nil {
		return err
	}
	defer closeRedis()
	fmt.Fprintf(c.out, "drover demo: %s\n", where)

	q, err := drover.NewQueue(rdb, *queueName, &drover.QueueOptions{Prefix: *prefix})
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
		switch job.Name {
		case "flaky":
			mu.Lock()
			flaky[job.ID]++
			n := flaky[job.ID]
			mu.Unlock()
			if n < 3 {
				return nil, fmt.Errorf("upstream timeout (attempt %d)", n)
			}
		case "doomed":
			return nil, errors.New("card declined")
		}
		return map[string]any{"ok": true, "job": job.Name}, nil
	})
	w, err := drover.NewWorker(rdb, *queueName, proc, &drover.WorkerOptions{
		Prefix: *prefix, Concurrency: 4, Name: "demo-worker", Logger: logger,
	})
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = w.Close(cctx)
	}()

	events, err := drover.NewQueueEvents(rdb, *queueName, &drover.QueueEventsOptions{Prefix: *prefix, LastEventID: "0"})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = events.Run(ctx, func(ev drover.Event) error {
			switch ev.Name {
			case drover.EventCompleted:
				fmt.Fprintf(c.out, "  completed job %-4s -> %s\n", ev.JobID, ev.ReturnValue)
			case drover.EventFailed:
				fmt.Fprintf(c.out, "  failed    job %-4s: %s (for good)\n", ev.JobID, ev.FailedReason)
			case drover.EventDelayed:
				fmt.Fprintf(c.out, "  delayed   job %-4s until %s\n", ev.JobID, ev.DelayUntil.Format("15:04:05.000"))
			case drover.EventRetriesExhausted:
				fmt.Fprintf(c.out, "  retries exhausted for job %s after %d attempts\n", ev.JobID, ev.AttemptsMade)
			}
			return nil
		})
	}()

	fmt.Fprintln(c.out, "adding jobs: 'ok' succeed, 'flaky' fail twice then succeed (exponential backoff), 'doomed' fail for good")
	retry := &drover.JobOptions{Attempts: 3, Backoff: &drover.Backoff{Type: drover.BackoffExponential, Delay: 200 * time.Millisecond}}
	add := func(round int) error {
		for i := range 3 {
			if _, err := q.Add(ctx, "ok", map[string]int{"round": round, "n": i}, nil); err != nil {
				return err
			}
		}
		if _, err := q.Add(ctx, "flaky", map[string]int{"round": round}, retry); err != nil {
			return err
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
			counts, err := q.GetJobCounts(context.WithoutCancel(ctx))
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
	fmt.Fprintln(c.out, "drover demo: stopped")
	return nil
}

// openRedis connects to url, or starts the embedded engine when url is "".
func openRedis(url string) (redis.UniversalClient, string, func(), error) {
	if url == "" {
		srv, err := embedredis.Start()
		if err != nil {
			return nil, "", nil, err
		}
		rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
		return rdb, fmt.Sprintf("no --redis given: running on an embedded Redis-compatible engine (miniredis, in this process) at %s", srv.Addr()),
			func() { _ = rdb.Close(); srv.Close() }, nil
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		return nil, "", nil, usagef("--redis %q: %v", url, err)
	}
	rdb := redis.NewClient(opt)
	return rdb, "using Redis at " + opt.Addr, func() { _ = rdb.Close() }, nil
}
