package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// scenarioSeed adds n jobs for a later process/retry/mem run: bulk calls of
// -chunk jobs, or -producers concurrent single adds where there is no bulk API.
func scenarioSeed(ctx context.Context, cfg config, im impl) (result, error) {
	t0 := time.Now()
	err := addBulk(ctx, im, cfg)
	if errors.Is(err, errNoBulk) {
		err = addSingle(ctx, im, cfg)
	}
	return rateResult(cfg.N, time.Since(t0), 0), err
}

func scenarioAddSingle(ctx context.Context, cfg config, im impl) (result, error) {
	cpu0 := cpuMicros()
	t0 := time.Now()
	err := addSingle(ctx, im, cfg)
	return rateResult(cfg.N, time.Since(t0), cpuMicros()-cpu0), err
}

func scenarioAddBulk(ctx context.Context, cfg config, im impl) (result, error) {
	cpu0 := cpuMicros()
	t0 := time.Now()
	err := addBulk(ctx, im, cfg)
	return rateResult(cfg.N, time.Since(t0), cpuMicros()-cpu0), err
}

func addSingle(ctx context.Context, im impl, cfg config) error {
	n, producers := cfg.N, cfg.Producers
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, producers)
	for p := range producers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if err := im.Add(ctx, cfg.spec(i)); err != nil {
					errs[p] = fmt.Errorf("add job %d: %w", i, err)
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

func addBulk(ctx context.Context, im impl, cfg config) error {
	n, chunk := cfg.N, cfg.Chunk
	js := make([]jobSpec, 0, chunk)
	for i := 0; i < n; i += chunk {
		js = js[:0]
		for k := i; k < min(i+chunk, n); k++ {
			js = append(js, cfg.spec(k))
		}
		if err := im.AddBulk(ctx, js); err != nil {
			return err
		}
	}
	return nil
}

func rateResult(n int, d time.Duration, cpu int64) result {
	return result{Seconds: d.Seconds(), Rate: float64(n) / d.Seconds(), CPUus: float64(cpu), RSSkb: rssKB()}
}

// scenarioProcess processes n pre-added jobs; for "retry" every job fails
// until its -attempts-th attempt. The clock runs from worker start until the
// backend shows all n jobs finished.
func scenarioProcess(ctx context.Context, cfg config, im impl) (result, error) {
	retry := cfg.Scenario == "retry"
	var done, first atomic.Int64
	all := make(chan struct{})
	n := int64(cfg.N)
	t0 := time.Now()
	h := func(ctx context.Context, p payload, attempt int) error {
		if first.Load() == 0 {
			first.CompareAndSwap(0, int64(time.Since(t0)))
		}
		if retry && attempt < cfg.Attempts {
			return errPlannedFail
		}
		if done.Add(1) == n {
			close(all)
		}
		return nil
	}
	cpu0 := cpuMicros()
	t0 = time.Now()
	if err := im.Start(ctx, h); err != nil {
		return result{}, err
	}
	defer stop(im)
	if err := waitAll(ctx, all, &done, cfg.N); err != nil {
		return result{}, err
	}
	if !cfg.StopAtHandled {
		if err := waitDrained(ctx, im, cfg.N); err != nil {
			return result{}, err
		}
	}
	res := rateResult(cfg.N, time.Since(t0), cpuMicros()-cpu0)
	res.FirstMs = float64(first.Load()) / 1e6
	return res, nil
}

func stop(im impl) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_ = im.Stop(ctx)
}

func waitAll(ctx context.Context, all <-chan struct{}, done *atomic.Int64, n int) error {
	select {
	case <-all:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("only %d of %d jobs handled before the timeout", done.Load(), n)
	}
}

func waitDrained(ctx context.Context, im impl, n int) error {
	for {
		ok, err := im.Drained(ctx, n)
		if err != nil {
			return fmt.Errorf("check drained: %w", err)
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.New("all jobs handled but the backend did not show them finished before the timeout")
		case <-time.After(time.Millisecond):
		}
	}
}

// scenarioLatency adds n jobs one at a time, a jittered -gap-ms apart, to an
// idle worker in this process and measures add call -> processor start.
func scenarioLatency(ctx context.Context, cfg config, im impl) (result, error) {
	base := time.Now()
	sent := make([]atomic.Int64, cfg.N) // ns since base, just before the add call
	lat := make([]float64, cfg.N)
	var done atomic.Int64
	all := make(chan struct{})
	h := func(ctx context.Context, p payload, attempt int) error {
		now := time.Since(base).Nanoseconds()
		lat[p.I] = float64(now-sent[p.I].Load()) / 1e6
		if done.Add(1) == int64(cfg.N) {
			close(all)
		}
		return nil
	}
	if err := im.Start(ctx, h); err != nil {
		return result{}, err
	}
	defer stop(im)
	sleepCtx(ctx, cfg.Warmup)
	cpu0 := cpuMicros()
	t0 := time.Now()
	for i := range cfg.N {
		sent[i].Store(time.Since(base).Nanoseconds())
		if err := im.Add(ctx, jobSpec{I: i}); err != nil {
			return result{}, fmt.Errorf("add job %d: %w", i, err)
		}
		sleepCtx(ctx, time.Duration(float64(cfg.Gap)*(0.5+rand.Float64())))
	}
	if err := waitAll(ctx, all, &done, cfg.N); err != nil {
		return result{}, err
	}
	res := rateResult(cfg.N, time.Since(t0), cpuMicros()-cpu0)
	res.P50ms, res.P99ms, res.MaxMs = percentiles(lat)
	return res, nil
}

// scenarioDelayed adds n delayed jobs due lead..lead+spread from their add
// and measures processor start - due time.
func scenarioDelayed(ctx context.Context, cfg config, im impl) (result, error) {
	late := make([]float64, cfg.N)
	var done atomic.Int64
	all := make(chan struct{})
	h := func(ctx context.Context, p payload, attempt int) error {
		late[p.I] = float64(time.Now().UnixMicro()-p.At) / 1e3
		if done.Add(1) == int64(cfg.N) {
			close(all)
		}
		return nil
	}
	if err := im.Start(ctx, h); err != nil {
		return result{}, err
	}
	defer stop(im)
	sleepCtx(ctx, cfg.Warmup)
	cpu0 := cpuMicros()
	t0 := time.Now()
	for i := range cfg.N {
		delay := cfg.Lead + time.Duration(int64(cfg.Spread)*int64(i)/int64(cfg.N))
		at := time.Now().Add(delay)
		if err := im.Add(ctx, jobSpec{I: i, At: at.UnixMicro(), Delay: delay}); err != nil {
			return result{}, fmt.Errorf("add job %d: %w", i, err)
		}
	}
	if err := waitAll(ctx, all, &done, cfg.N); err != nil {
		return result{}, err
	}
	res := rateResult(cfg.N, time.Since(t0), cpuMicros()-cpu0)
	res.P50ms, res.P99ms, res.MaxMs = percentiles(late)
	return res, nil
}

// scenarioMem processes n pre-added jobs at concurrency -c; each handler
// blocks until all n are in flight (or the timeout), when the resident set is
// sampled.
func scenarioMem(ctx context.Context, cfg config, im impl) (result, error) {
	var inflight, done atomic.Int64
	allIn := make(chan struct{})
	release := make(chan struct{})
	all := make(chan struct{})
	n := int64(cfg.N)
	h := func(ctx context.Context, p payload, attempt int) error {
		if inflight.Add(1) == n {
			close(allIn)
		}
		select {
		case <-release:
		case <-ctx.Done():
		}
		if done.Add(1) == n {
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
	wait, cancel := context.WithTimeout(ctx, cfg.Timeout/2)
	select {
	case <-allIn:
	case <-wait.Done():
	}
	cancel()
	res := result{Seconds: time.Since(t0).Seconds(), RSSkb: rssKB(), Inflight: int(inflight.Load())}
	close(release)
	if res.Inflight < cfg.N {
		res.Note = fmt.Sprintf("only %d of %d jobs were in flight at once", res.Inflight, cfg.N)
	}
	if err := waitAll(ctx, all, &done, cfg.N); err != nil {
		return res, err
	}
	res.CPUus = float64(cpuMicros() - cpu0)
	return res, nil
}

func sleepCtx(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// percentiles returns the nearest-rank p50, p99 and max of vs.
func percentiles(vs []float64) (p50, p99, maxV float64) {
	s := slices.Clone(vs)
	slices.Sort(s)
	rank := func(p float64) float64 {
		i := int(p*float64(len(s))+0.999999) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return rank(0.50), rank(0.99), s[len(s)-1]
}

// cpuMicros is this process' user+sys CPU time so far.
func cpuMicros() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano()/1e3 + ru.Stime.Nano()/1e3
}

// rssKB is this process' current resident set size (VmRSS), in KiB.
func rssKB() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb
		}
	}
	return 0
}
