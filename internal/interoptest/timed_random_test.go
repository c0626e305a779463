package interoptest_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// randomTimedScenarios are seeded random timed scenarios for
// TestDifferentialTimed: 5 to 10 jobs with due times 100ms apart from one
// creation time, priorities, LIFO, attempts with each backoff kind, and a
// processor behaviour per job (complete, fail some times, fail for good,
// move itself to delayed, sleep), taken by one worker. Retries come due at
// times that depend on the machine, so only each job's events and the
// final state are compared, not the processing order.
// DIFFTEST_TIMED_SEEDS=n adds seeds 1..n (0 by default).
func randomTimedScenarios() []timedScenario {
	n, _ := strconv.Atoi(os.Getenv("DIFFTEST_TIMED_SEEDS"))
	var out []timedScenario
	for seed := 1; seed <= n; seed++ {
		out = append(out, randomTimedScenario(uint64(seed)))
	}
	return out
}

func randomTimedScenario(seed uint64) timedScenario {
	rng := rand.New(rand.NewPCG(seed, 0x7153))
	type job struct {
		j    timedJob
		data map[string]any
	}
	count := 5 + rng.IntN(6)
	concurrency := 1 + rng.IntN(3)
	var limiter *drover.RateLimit
	if rng.IntN(3) == 0 {
		limiter = &drover.RateLimit{Max: 1 + rng.IntN(3), Duration: time.Duration(200+100*rng.IntN(3)) * time.Millisecond}
	}
	second := rng.IntN(3) == 0
	// The admin side pauses the queue at 250ms for 300ms; and retries the
	// failed jobs once all finished.
	pause := rng.IntN(4) == 0
	retryFailed := rng.IntN(3) == 0
	// A global concurrency the admin side sets before the workers start.
	globalConc := 0
	if rng.IntN(4) == 0 {
		globalConc = 1 + rng.IntN(2)
	}
	var jobs []job
	var desc []string
	rateLimits := false
	for i := range count {
		n := map[string]any{}
		d := &drover.JobOptions{}
		if due := rng.IntN(9); due > 0 {
			n["delay"], d.Delay = due*100, time.Duration(due*100)*time.Millisecond
		}
		if rng.IntN(3) == 0 {
			p := []int{1, 3, 3, 7}[rng.IntN(4)]
			n["priority"], d.Priority = p, p
		} else if rng.IntN(3) == 0 {
			n["lifo"], d.LIFO = true, true
		}
		if rng.IntN(2) == 0 {
			a := 2 + rng.IntN(2)
			n["attempts"], d.Attempts = a, a
			typ, ms := "fixed", 100*(1+rng.IntN(3))
			switch rng.IntN(5) {
			case 1:
				typ, ms = "exponential", 50*(1+rng.IntN(2))
			case 2:
				typ, ms = "linear100", 0
			case 3:
				typ, ms = "zero", 0
			case 4:
				typ, ms = "minus5", 0
			}
			n["backoff"] = map[string]any{"type": typ, "delay": ms}
			d.Backoff = &drover.Backoff{Type: typ, Delay: time.Duration(ms) * time.Millisecond}
		}
		if rng.IntN(4) == 0 {
			// Deduplicated among the adds, which all run before a worker
			// starts: a ttl longer than the adds take, or none (until the
			// job finishes), or debounce (replace, extend).
			dd := map[string]any{"id": fmt.Sprint("x", rng.IntN(2))}
			dj := &drover.Deduplication{ID: dd["id"].(string)}
			switch rng.IntN(3) {
			case 1:
				dd["ttl"], dj.TTL = 2000, 2*time.Second
			case 2:
				dd["ttl"], dj.TTL = 2000, 2*time.Second
				dd["replace"], dj.Replace = true, true
				dd["extend"], dj.Extend = true, true
			}
			n["deduplication"], d.Deduplication = dd, dj
		}
		var bh bullmqoracle.Behavior
		done := bullmqoracle.Return(fmt.Sprint("r", i))
		switch rng.IntN(7) {
		case 0:
			bh = done
		case 1:
			bh = bullmqoracle.FailTimes(1+rng.IntN(2), "flaky", fmt.Sprint("r", i))
		case 2:
			bh = bullmqoracle.Unrecoverable("broken")
		case 3:
			bh = bullmqoracle.MoveToDelayed(time.Duration(100*(1+rng.IntN(3)))*time.Millisecond, 1+rng.IntN(2), &done)
		case 4:
			bh = bullmqoracle.SleepThen(time.Duration(rng.IntN(60))*time.Millisecond, done)
		case 5:
			bh = bullmqoracle.Fail("always")
		case 6:
			// queue.rateLimit + RateLimitError on the first start.
			bh = bullmqoracle.RateLimited(time.Duration(100*(1+rng.IntN(2)))*time.Millisecond, 1, &done)
			rateLimits = true
		}
		jobs = append(jobs, job{timedJob{fmt.Sprint("j", i), n, d}, map[string]any{"i": i, "b": bh}})
		desc = append(desc, fmt.Sprintf("%v %+v", n, bh))
	}
	return timedScenario{
		name: fmt.Sprintf("Random%d", seed),
		run: func(t *testing.T, b *bundle, r timedRoles) []string {
			t.Logf("seed %d, concurrency %d, limiter %v, second worker %v, pause %v, retry failed %v, global concurrency %d, jobs:\n%v",
				seed, concurrency, limiter, second, pause, retryFailed, globalConc, desc)
			if globalConc > 0 {
				if r.admin == nodeImpl {
					require.NoError(t, b.oracle.SetGlobalConcurrency(context.Background(), b.prefix, queueName, globalConc))
				} else {
					require.NoError(t, b.dq.SetGlobalConcurrency(context.Background(), globalConc))
				}
			}
			var notes []string
			t0 := time.Now()
			for _, j := range jobs {
				tj := j.j
				node := map[string]any{"timestamp": t0.UnixMilli()}
				for k, v := range tj.node {
					node[k] = v
				}
				drv := *tj.drv
				drv.Timestamp = t0
				notes = append(notes, b.addTimed(t, r.add, timedJob{tj.name, node, &drv}, j.data))
			}
			added := time.Now()
			// Jobs a debounce replaced are gone: count what is there.
			counts, err := b.dq.GetJobCounts(context.Background())
			require.NoError(t, err)
			var total int64
			for _, n := range counts {
				total += n
			}
			w := timedWorker{workerSpec: workerSpec{concurrency: concurrency, behavior: bullmqoracle.FromData("b")}, limiter: limiter}
			b.startTimedWorker(t, r.work, w)
			if second {
				b.startTimedWorker(t, r.admin, w)
			}
			if pause {
				sleepMS(250)
				b.pause(t, r.admin)
				sleepMS(300)
				b.resume(t, r.admin)
			}
			b.waitFinished(t, total)
			if retryFailed {
				ctx := context.Background()
				if r.admin == nodeImpl {
					require.NoError(t, b.oracle.RetryJobs(ctx, b.prefix, queueName, bullmqoracle.RetryJobsOptions{State: "failed"}))
				} else {
					_, err := b.dq.RetryJobs(ctx, &drover.RetryJobsOptions{State: drover.StateFailed})
					require.NoError(t, err)
				}
				b.waitFinished(t, total)
			}
			// Past the ttls: whether a key with one is left is then not
			// timing, and a key left without one shows.
			time.Sleep(time.Until(added.Add(2300 * time.Millisecond)))
			return notes
		},
		rewrite: func(raw *statedump.Snapshot) {
			dropLimiterKey(raw)
			if limiter != nil || rateLimits {
				// A job the limiter sends back to prioritized counts
				// in pc: whether one was sent back is timing.
				delete(raw.Keys, queueName+":pc")
			}
		},
		unordered: true,
		// A processor's RateLimitError, and a global concurrency over
		// delayed jobs, make runs of Node BullMQ alone differ by over a
		// second (seen: 4.3 s and 5.7 s for one seed).
		anyDuration: rateLimits || globalConc > 0,
	}
}
