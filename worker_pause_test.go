package drover_test

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/logkey"
	"github.com/seed40057009/drover/internal/testkit"
)

// pauseProbe counts what a worker's hooks saw.
type pauseProbe struct {
	started  atomic.Int32
	finished atomic.Int32
	mu       sync.Mutex
	ids      map[string]int // job id -> times started
}

func (p *pauseProbe) hooks() *drover.WorkerHooks {
	return &drover.WorkerHooks{
		JobStarted: func(job *drover.Job) {
			p.started.Add(1)
			p.mu.Lock()
			if p.ids == nil {
				p.ids = map[string]int{}
			}
			p.ids[job.ID]++
			p.mu.Unlock()
		},
		JobFinished: func(*drover.Job, drover.Outcome, time.Duration, error) { p.finished.Add(1) },
	}
}

func (p *pauseProbe) startedIDs() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]int{}
	for k, v := range p.ids {
		out[k] = v
	}
	return out
}

// waitBlocked waits until the worker named name blocks on the marker on its
// named connection (CLIENT LIST: flag b, cmd bzpopmin).
func (b *testBundle) waitBlocked(t *testing.T, name string) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, "worker "+name+" to block on the marker", func() bool {
		for _, c := range strings.Split(b.rdb.ClientList(context.Background()).Val(), "\n") {
			if strings.Contains(c, ":w:"+name+" ") && strings.Contains(c, " flags=b ") && strings.Contains(c, " cmd=bzpopmin ") {
				return true
			}
		}
		return false
	})
}

// counts is the queue's job counts for the states the pause tests look at.
func (b *testBundle) counts(t *testing.T) map[drover.JobState]int64 {
	t.Helper()
	c, err := b.queue.GetJobCounts(context.Background(), drover.StateWaiting, drover.StateActive, drover.StateCompleted)
	require.NoError(t, err)
	return c
}

func (b *testBundle) addN(t *testing.T, n int) []string {
	t.Helper()
	res, err := b.queue.AddBulk(context.Background(), numberedJobs("p", n))
	require.NoError(t, err)
	ids := make([]string, len(res))
	for i, r := range res {
		ids[i] = r.Job.ID
	}
	return ids
}

func TestWorkerPause(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	noop := func(context.Context, *drover.Job) (any, error) { return "ok", nil }

	// A worker blocked on the marker when Pause is called takes none of the
	// jobs added afterwards, however long it is left (DrainDelay 20ms, and
	// BZPOPMIN's one-second block), and leaves the marker for others.
	t.Run("BlockedFetchTakesNothing", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		p := &pauseProbe{}
		w := b.startWorker(t, noop, &drover.WorkerOptions{Name: "blocked", DrainDelay: 20 * time.Millisecond, Hooks: p.hooks()})
		b.waitBlocked(t, "blocked")
		require.NoError(t, w.Pause(ctx, nil))
		require.True(t, w.IsPaused())
		require.False(t, w.IsRunning())
		b.addN(t, 5)
		time.Sleep(1500 * time.Millisecond)
		require.Equal(t, int32(0), p.started.Load())
		require.Equal(t, map[drover.JobState]int64{drover.StateWaiting: 5, drover.StateActive: 0, drover.StateCompleted: 0}, b.counts(t))
		n, err := b.rdb.Exists(ctx, b.prefix+":q:marker").Result()
		require.NoError(t, err)
		require.Equal(t, int64(1), n, "the paused worker consumed the queue's marker")
		// Still listed by getWorkers while paused, as a paused Node worker is.
		testkit.WaitFor(t, 5*time.Second, "the paused worker to be listed", func() bool {
			ws, err := b.queue.GetWorkers(ctx)
			require.NoError(t, err)
			return len(ws) == 1 && ws[0].Name == "blocked"
		})

		require.NoError(t, w.Resume())
		require.False(t, w.IsPaused())
		require.True(t, w.IsRunning())
		testkit.WaitFor(t, 5*time.Second, "the jobs to complete after Resume", func() bool {
			return b.counts(t)[drover.StateCompleted] == 5
		})
		require.Equal(t, int32(5), p.started.Load())
	})

	// Resume fetches at once, not after the worker's DrainDelay.
	t.Run("ResumeIsPrompt", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		w := b.startWorker(t, noop, &drover.WorkerOptions{Name: "prompt", DrainDelay: 30 * time.Second})
		b.waitBlocked(t, "prompt")
		require.NoError(t, w.Pause(ctx, nil))
		ids := b.addN(t, 3)
		time.Sleep(100 * time.Millisecond)
		began := time.Now()
		require.NoError(t, w.Resume())
		for _, id := range ids {
			b.waitState(t, id, drover.StateCompleted)
		}
		require.Less(t, time.Since(began), 3*time.Second)
	})

	// Pause returns once the running jobs' results are written, and their
	// writes fetch no next job although one waits.
	t.Run("WaitsForActiveJobs", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		release := make(chan struct{})
		p := &pauseProbe{}
		w := b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			<-release
			return "done", nil
		}, &drover.WorkerOptions{Concurrency: 2, Hooks: p.hooks()})
		ids := b.addN(t, 2)
		testkit.WaitFor(t, 5*time.Second, "both jobs to start", func() bool { return p.started.Load() == 2 })
		third := b.addN(t, 1)[0]

		paused := make(chan error, 1)
		go func() { paused <- w.Pause(ctx, nil) }()
		select {
		case err := <-paused:
			t.Fatalf("Pause returned %v while two jobs ran", err)
		case <-time.After(300 * time.Millisecond):
		}
		require.True(t, w.IsPaused())
		require.True(t, w.IsRunning(), "a paused worker with running jobs runs")
		close(release)
		require.NoError(t, <-paused)
		for _, id := range ids {
			st, err := b.queue.GetJobState(ctx, id)
			require.NoError(t, err)
			require.Equal(t, drover.StateCompleted, st, "job %s when Pause returned", id)
		}
		require.False(t, w.IsRunning())
		time.Sleep(300 * time.Millisecond)
		st, err := b.queue.GetJobState(ctx, third)
		require.NoError(t, err)
		require.Equal(t, drover.StateWaiting, st)
		require.Equal(t, int32(2), p.started.Load())
		require.NoError(t, w.Resume())
		b.waitState(t, third, drover.StateCompleted)
	})

	// DoNotWaitActive returns at once; the running job still finishes and
	// its write fetches nothing.
	t.Run("DoNotWaitActive", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		release := make(chan struct{})
		p := &pauseProbe{}
		w := b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			<-release
			return nil, nil
		}, &drover.WorkerOptions{Hooks: p.hooks()})
		first := b.addN(t, 1)[0]
		testkit.WaitFor(t, 5*time.Second, "the job to start", func() bool { return p.started.Load() == 1 })
		second := b.addN(t, 1)[0]
		began := time.Now()
		require.NoError(t, w.Pause(ctx, &drover.WorkerPauseOptions{DoNotWaitActive: true}))
		require.Less(t, time.Since(began), 500*time.Millisecond)
		require.True(t, w.IsRunning())
		st, err := b.queue.GetJobState(ctx, first)
		require.NoError(t, err)
		require.Equal(t, drover.StateActive, st)
		close(release)
		b.waitState(t, first, drover.StateCompleted)
		testkit.WaitFor(t, 5*time.Second, "the worker to stop running", func() bool { return !w.IsRunning() })
		time.Sleep(200 * time.Millisecond)
		st, err = b.queue.GetJobState(ctx, second)
		require.NoError(t, err)
		require.Equal(t, drover.StateWaiting, st)
		require.Equal(t, int32(1), p.started.Load())
	})

	// When ctx ends first, Pause says so and the worker stays paused.
	t.Run("ContextEndsFirst", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		release := make(chan struct{})
		p := &pauseProbe{}
		w := b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
			<-release
			return nil, nil
		}, &drover.WorkerOptions{Hooks: p.hooks()})
		first := b.addN(t, 1)[0]
		testkit.WaitFor(t, 5*time.Second, "the job to start", func() bool { return p.started.Load() == 1 })
		second := b.addN(t, 1)[0]
		pctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		err := w.Pause(pctx, nil)
		require.ErrorIs(t, err, context.DeadlineExceeded)
		require.Contains(t, err.Error(), "active jobs")
		require.True(t, w.IsPaused())
		close(release)
		b.waitState(t, first, drover.StateCompleted)
		time.Sleep(200 * time.Millisecond)
		st, err := b.queue.GetJobState(ctx, second)
		require.NoError(t, err)
		require.Equal(t, drover.StateWaiting, st)
	})

	// The pause and the resume are logged once each, as a Node worker emits
	// paused and resumed once.
	t.Run("Logged", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		buf := &testkit.SyncBuffer{}
		logger := slog.New(slog.NewJSONHandler(buf, nil))
		w := b.startWorker(t, noop, &drover.WorkerOptions{Logger: logger, Name: "logged"})
		require.NoError(t, w.Pause(ctx, &drover.WorkerPauseOptions{DoNotWaitActive: true}))
		require.NoError(t, w.Pause(ctx, nil))
		require.NoError(t, w.Resume())
		require.NoError(t, w.Resume())
		paused := logLines(t, buf, "worker paused")
		require.Len(t, paused, 1)
		require.Equal(t, true, paused[0][logkey.DoNotWaitActive])
		require.Equal(t, "logged", paused[0][logkey.Worker])
		require.Len(t, logLines(t, buf, "worker resumed"), 1)
	})

	// Twice is harmless, both ways.
	t.Run("Idempotent", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		w := b.startWorker(t, noop, nil)
		require.NoError(t, w.Resume())
		require.False(t, w.IsPaused())
		require.NoError(t, w.Pause(ctx, nil))
		require.NoError(t, w.Pause(ctx, &drover.WorkerPauseOptions{DoNotWaitActive: true}))
		require.True(t, w.IsPaused())
		id := b.addN(t, 1)[0]
		require.NoError(t, w.Resume())
		require.NoError(t, w.Resume())
		require.False(t, w.IsPaused())
		b.waitState(t, id, drover.StateCompleted)
	})

	// Pause before Start: the worker starts paused. Resume before Start only
	// undoes it; it does not start the worker.
	t.Run("BeforeStart", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		p := &pauseProbe{}
		w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(noop),
			&drover.WorkerOptions{Prefix: b.prefix, DrainDelay: 20 * time.Millisecond, Hooks: p.hooks()})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })
		require.False(t, w.IsRunning())
		require.NoError(t, w.Pause(ctx, nil))
		require.NoError(t, w.Resume())
		require.NoError(t, w.Pause(ctx, nil))
		require.True(t, w.IsPaused())
		require.False(t, w.IsRunning())
		id := b.addN(t, 1)[0]
		require.NoError(t, w.Start(ctx))
		require.False(t, w.IsRunning())
		time.Sleep(1200 * time.Millisecond)
		require.Equal(t, int32(0), p.started.Load())
		require.NoError(t, w.Resume())
		require.True(t, w.IsRunning())
		b.waitState(t, id, drover.StateCompleted)
	})

	// Resume on a worker never started (and not paused) does nothing: the
	// worker takes no job until Start. Node's resume() runs a worker that
	// is not running; drover's Resume has no ctx to run one with (README,
	// compatibility table).
	t.Run("ResumeBeforeStartDoesNotStart", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		p := &pauseProbe{}
		w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(noop),
			&drover.WorkerOptions{Prefix: b.prefix, Hooks: p.hooks()})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })
		id := b.addN(t, 1)[0]
		require.NoError(t, w.Resume())
		require.False(t, w.IsPaused())
		require.False(t, w.IsRunning())
		time.Sleep(300 * time.Millisecond)
		require.Equal(t, int32(0), p.started.Load())
		require.Equal(t, int64(1), b.counts(t)[drover.StateWaiting])
		require.NoError(t, w.Start(ctx))
		b.waitState(t, id, drover.StateCompleted)
	})

	// A second Pause returns at once while the first still waits for the
	// running job, as Node's pause() does when the worker is paused
	// already (TestDifferentialWorkerPauseTwice compares both).
	t.Run("SecondPauseReturnsAtOnce", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		release := make(chan struct{})
		started := make(chan struct{}, 1)
		w := b.startWorker(t, func(context.Context, *drover.Job) (any, error) {
			started <- struct{}{}
			<-release
			return "ok", nil
		}, nil)
		var once sync.Once
		open := func() { once.Do(func() { close(release) }) }
		t.Cleanup(open) // before the worker's Close, should the test fail
		id := b.addN(t, 1)[0]
		<-started
		first := make(chan error, 1)
		go func() { first <- w.Pause(ctx, nil) }()
		testkit.WaitFor(t, 5*time.Second, "the first Pause to pause", w.IsPaused)
		sctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		require.NoError(t, w.Pause(sctx, nil))
		select {
		case err := <-first:
			t.Fatalf("the first Pause returned (%v) before the job ended", err)
		default:
		}
		open()
		require.NoError(t, <-first)
		b.waitState(t, id, drover.StateCompleted)
	})

	// Close of a paused worker is prompt; Pause and Resume afterwards say
	// the worker is closed.
	t.Run("CloseWhilePaused", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(noop),
			&drover.WorkerOptions{Prefix: b.prefix, Name: "closing"})
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		b.waitBlocked(t, "closing")
		require.NoError(t, w.Pause(ctx, nil))
		b.addN(t, 2)
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		began := time.Now()
		require.NoError(t, w.Close(cctx))
		require.Less(t, time.Since(began), time.Second)
		require.False(t, w.IsRunning())
		require.ErrorIs(t, w.Pause(ctx, nil), drover.ErrClosed)
		require.ErrorIs(t, w.Resume(), drover.ErrClosed)
		require.Equal(t, int64(2), b.counts(t)[drover.StateWaiting])
		n, err := b.rdb.Exists(ctx, b.prefix+":q:marker:"+w.ID()).Result()
		require.NoError(t, err)
		require.Zero(t, n, "the worker's wake key outlived Close")
	})

	// A paused worker leaves the queue to its other workers.
	t.Run("OtherWorkerTakesTheJobs", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		pa, pb := &pauseProbe{}, &pauseProbe{}
		a := b.startWorker(t, noop, &drover.WorkerOptions{Name: "a", Hooks: pa.hooks()})
		b.waitBlocked(t, "a")
		require.NoError(t, a.Pause(ctx, nil))
		b.startWorker(t, noop, &drover.WorkerOptions{Name: "b", Hooks: pb.hooks()})
		b.waitBlocked(t, "b")
		ids := b.addN(t, 20)
		for _, id := range ids {
			b.waitState(t, id, drover.StateCompleted)
		}
		require.Equal(t, int32(0), pa.started.Load())
		require.Equal(t, int32(20), pb.started.Load())
	})

	// While paused the worker runs no stalled check (BullMQ stops a paused
	// worker's checker); Resume runs one at once, and the recovered job runs.
	t.Run("NoStalledCheckWhilePaused", func(t *testing.T) {
		t.Parallel()
		b := setupQueue(t)
		var stalled atomic.Int32
		w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(noop), &drover.WorkerOptions{
			Prefix: b.prefix, StalledInterval: 50 * time.Millisecond,
			Hooks: &drover.WorkerHooks{Stalled: func(string, int) { stalled.Add(1) }}})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })
		require.NoError(t, w.Pause(ctx, nil))
		require.NoError(t, w.Start(ctx))
		id := b.addN(t, 1)[0]
		// A job in active with no lock, as a dead worker leaves it.
		require.NoError(t, b.rdb.LMove(ctx, b.prefix+":q:wait", b.prefix+":q:active", "RIGHT", "LEFT").Err())
		time.Sleep(400 * time.Millisecond) // eight intervals
		require.Zero(t, stalled.Load())
		st, err := b.queue.GetJobState(ctx, id)
		require.NoError(t, err)
		require.Equal(t, drover.StateActive, st)
		require.NoError(t, w.Resume())
		b.waitState(t, id, drover.StateCompleted)
		require.Equal(t, int32(1), stalled.Load())
	})
}

// TestWorkerPauseUnderLoad pauses a busy worker again and again: each time
// Pause returns, no job of the queue is active (every job the worker took
// has its result written) and the worker starts no job until Resume.
func TestWorkerPauseUnderLoad(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setupQueue(t)
	p := &pauseProbe{}
	w := b.startWorker(t, func(ctx context.Context, job *drover.Job) (any, error) {
		time.Sleep(time.Millisecond)
		return nil, nil
	}, &drover.WorkerOptions{Concurrency: 8, DrainDelay: 20 * time.Millisecond, Hooks: p.hooks()})
	total := 0
	for round := range 15 {
		total += len(b.addN(t, 150))
		time.Sleep(time.Duration(round%5) * 7 * time.Millisecond)
		require.NoError(t, w.Pause(ctx, nil))
		c := b.counts(t)
		require.Zero(t, c[drover.StateActive], "round %d: active jobs once Pause returned", round)
		require.Equal(t, p.started.Load(), p.finished.Load(), "round %d", round)
		startedAt := p.started.Load()
		time.Sleep(30 * time.Millisecond)
		require.Equal(t, startedAt, p.started.Load(), "round %d: a job started while paused", round)
		require.Equal(t, int64(total), c[drover.StateWaiting]+c[drover.StateCompleted], "round %d", round)
		require.NoError(t, w.Resume())
	}
	testkit.WaitFor(t, 20*time.Second, "every job to complete", func() bool {
		return b.counts(t)[drover.StateCompleted] == int64(total)
	})
	for id, n := range p.startedIDs() {
		require.Equal(t, 1, n, "job %s started %d times", id, n)
	}
}

// TestWorkerPauseRace hammers Pause, Resume and Close from goroutines while
// jobs flow (run it with -race): no call panics or hangs, Pause and Resume
// end with nil or ErrClosed, and no job is lost or run twice.
func TestWorkerPauseRace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for run := range 3 {
		t.Run(strconv.Itoa(run), func(t *testing.T) {
			t.Parallel()
			b := setupQueue(t)
			p := &pauseProbe{}
			w, err := drover.NewWorker(b.rdb, b.name, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
				time.Sleep(time.Millisecond)
				return nil, nil
			}), &drover.WorkerOptions{Prefix: b.prefix, Concurrency: 4, DrainDelay: 10 * time.Millisecond, Hooks: p.hooks()})
			require.NoError(t, err)
			ids := b.addN(t, 300)
			require.NoError(t, w.Start(ctx))

			okOrClosed := func(err error) error {
				if err == nil || errors.Is(err, drover.ErrClosed) {
					return nil
				}
				return err
			}
			var wg sync.WaitGroup
			var errMu sync.Mutex
			var errs []error
			report := func(err error) {
				if err = okOrClosed(err); err != nil {
					errMu.Lock()
					errs = append(errs, err)
					errMu.Unlock()
				}
			}
			stop := make(chan struct{})
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := 0; ; i++ {
						select {
						case <-stop:
							return
						default:
						}
						pctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
						err := w.Pause(pctx, &drover.WorkerPauseOptions{DoNotWaitActive: (g+i)%2 == 0})
						cancel()
						if !errors.Is(err, context.DeadlineExceeded) {
							report(err)
						}
						_ = w.IsRunning()
						time.Sleep(time.Duration(i%3) * time.Millisecond)
						report(w.Resume())
					}
				}()
			}
			time.Sleep(time.Duration(150+run*100) * time.Millisecond)
			var closeErr error
			closed := make(chan struct{})
			go func() {
				defer close(closed)
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				closeErr = w.Close(cctx)
			}()
			go func() { _ = w.Close(ctx) }() // a second Close at the same time
			select {
			case <-closed:
			case <-time.After(15 * time.Second):
				t.Fatal("Close hung")
			}
			close(stop)
			wg.Wait()
			require.NoError(t, closeErr)
			require.Empty(t, errs)
			require.False(t, w.IsRunning())
			c := b.counts(t)
			require.Zero(t, c[drover.StateActive])
			require.Equal(t, int64(len(ids)), c[drover.StateWaiting]+c[drover.StateCompleted])
			require.Equal(t, c[drover.StateCompleted], int64(p.finished.Load()))
			for id, n := range p.startedIDs() {
				require.Equal(t, 1, n, "job %s started %d times", id, n)
			}
		})
	}
}

// TestWorkerPauseWaitsForAFetchOnItsWay: a result write that also fetches
// the next job is on its way (held by CLIENT PAUSE WRITE on a server of
// the test's own) when Pause(DoNotWaitActive) is called. Pause returns only
// once that call has returned, with the job it took counted as running, and
// no job moves to active after that.
func TestWorkerPauseWaitsForAFetchOnItsWay(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, q := ownServer(t, nil)
	release := make(chan struct{})
	p := &pauseProbe{}
	w, err := drover.NewWorker(rdb, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		if job.Name == "hold" {
			<-release
		}
		return nil, nil
	}), &drover.WorkerOptions{Hooks: p.hooks()})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })
	hold, err := q.Add(ctx, "hold", nil, nil)
	require.NoError(t, err)
	testkit.WaitFor(t, 5*time.Second, "the first job to start", func() bool { return p.started.Load() == 1 })
	next, err := q.AddBulk(ctx, numberedJobs("next", 2))
	require.NoError(t, err)

	const hold1s = 1000 * time.Millisecond
	require.NoError(t, rdb.Do(ctx, "CLIENT", "PAUSE", hold1s.Milliseconds(), "WRITE").Err())
	paused := time.Now()
	close(release) // its write, fetching the next job, now waits for the server
	time.Sleep(200 * time.Millisecond)
	require.NoError(t, w.Pause(ctx, &drover.WorkerPauseOptions{DoNotWaitActive: true}))
	require.GreaterOrEqual(t, time.Since(paused), hold1s-100*time.Millisecond,
		"Pause returned while a fetch was on its way")
	st, err := q.GetJobState(ctx, hold.Job.ID)
	require.NoError(t, err)
	require.Equal(t, drover.StateCompleted, st)
	// The write's fetch took the next job before Pause returned; nothing
	// after that.
	testkit.WaitFor(t, 5*time.Second, "the fetched job to complete", func() bool {
		st, err := q.GetJobState(ctx, next[0].Job.ID)
		require.NoError(t, err)
		return st == drover.StateCompleted
	})
	time.Sleep(300 * time.Millisecond)
	st, err = q.GetJobState(ctx, next[1].Job.ID)
	require.NoError(t, err)
	require.Equal(t, drover.StateWaiting, st)
	require.Equal(t, int32(2), p.started.Load())
}
