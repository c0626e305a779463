package metrics_test

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/metrics"
)

// scrape fetches url and parses it with the Prometheus text parser.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	require.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return fams
}

// value sums the values of the family's series whose labels include labels
// (sample counts for histograms).
func value(fams map[string]*dto.MetricFamily, name string, labels map[string]string) float64 {
	f := fams[name]
	if f == nil {
		return 0
	}
	sum := 0.0
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}

func TestMetrics(t *testing.T) {
	t.Parallel()
	ctx := context.Background()

	type testBundle struct {
		rdb    *redis.Client
		prefix string
		queue  *drover.Queue
		reg    *prometheus.Registry
		url    string
	}
	setup := func(t *testing.T) *testBundle {
		t.Helper()
		rdb, prefix := redistest.Client(t)
		ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix, DiscoveryInterval: 50 * time.Millisecond})
		require.NoError(t, err)
		t.Cleanup(func() { require.NoError(t, ins.Close(context.Background())) })
		reg, err := metrics.NewRegistry(ins, nil)
		require.NoError(t, err)
		srv := httptest.NewServer(metrics.Handler(reg))
		t.Cleanup(srv.Close)
		q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
		require.NoError(t, err)
		return &testBundle{rdb: rdb, prefix: prefix, queue: q, reg: reg, url: srv.URL}
	}
	startWorker := func(t *testing.T, b *testBundle, proc drover.ProcessorFunc, opts drover.WorkerOptions) {
		t.Helper()
		opts.Prefix = b.prefix
		opts.DrainDelay = 50 * time.Millisecond
		opts.Hooks = metrics.WorkerHooks(b.reg, "q")
		w, err := drover.NewWorker(b.rdb, "q", proc, &opts)
		require.NoError(t, err)
		require.NoError(t, w.Start(ctx))
		t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })
	}
	q := map[string]string{"queue": "q"}
	waitCounter := func(t *testing.T, b *testBundle, name string, want float64) map[string]*dto.MetricFamily {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			fams := scrape(t, b.url+"/metrics")
			got := value(fams, name, q)
			if got == want {
				return fams
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s = %v, want %v", name, got, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	t.Run("CancelledAndTimedOutAttempts", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		started := make(chan string, 10)
		startWorker(t, b, func(ctx context.Context, job *drover.Job) (any, error) {
			started <- job.Name
			<-ctx.Done()
			return nil, ctx.Err()
		}, drover.WorkerOptions{Concurrency: 4})
		_, err := b.queue.Add(ctx, "slow", nil, &drover.JobOptions{Attempts: 2, Timeout: 20 * time.Millisecond})
		require.NoError(t, err)
		res, err := b.queue.Add(ctx, "stuck", nil, nil)
		require.NoError(t, err)
		for name := ""; name != "stuck"; name = <-started {
		}
		require.NoError(t, b.queue.CancelJob(ctx, res.Job.ID, "stop", nil))
		waitCounter(t, b, "drover_attempts_timed_out_total", 2)
		fams := waitCounter(t, b, "drover_attempts_cancelled_total", 1)
		require.Equal(t, 1.0, value(fams, "drover_job_duration_seconds", map[string]string{"queue": "q", "outcome": "cancelled"}))
		fams = waitCounter(t, b, "drover_jobs_failed_total", 2)
		require.Equal(t, 1.0, value(fams, "drover_job_duration_seconds", map[string]string{"queue": "q", "outcome": "timed-out"}))
		require.Equal(t, 1.0, value(fams, "drover_jobs_retried_total", q), "the first timed-out attempt was retried")
	})

	// Every job that fails for good on its last attempt is a retries-
	// exhausted job, whatever ended the attempt: a timeout, a cancel or an
	// unrecoverable error, as much as a plain error. The ground truth is
	// the retries-exhausted events Redis got (BullMQ writes one when the
	// failing attempt reaches the job's attempts).
	t.Run("RetriesExhaustedMatchesTheEvents", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		started := make(chan string, 10)
		startWorker(t, b, func(ctx context.Context, job *drover.Job) (any, error) {
			switch job.Name {
			case "slow", "stuck":
				started <- job.Name
				<-ctx.Done()
				return nil, context.Cause(ctx)
			case "fatal":
				return nil, drover.Unrecoverable(errors.New("fatal"))
			case "fatal-early":
				return nil, drover.Unrecoverable(errors.New("fatal with attempts left"))
			}
			return nil, errors.New("always")
		}, drover.WorkerOptions{Concurrency: 4})
		add := func(name string, opts *drover.JobOptions) string {
			res, err := b.queue.Add(ctx, name, nil, opts)
			require.NoError(t, err)
			return res.Job.ID
		}
		add("slow", &drover.JobOptions{Attempts: 2, Timeout: 20 * time.Millisecond})
		add("fatal", nil)
		add("fatal-early", &drover.JobOptions{Attempts: 3})
		add("doomed", &drover.JobOptions{Attempts: 2})
		stuck := add("stuck", nil)
		for name := ""; name != "stuck"; name = <-started {
		}
		require.NoError(t, b.queue.CancelJob(ctx, stuck, "stop", nil))
		waitCounter(t, b, "drover_jobs_failed_total", 5)
		evs, err := b.rdb.XRange(ctx, b.prefix+":q:events", "-", "+").Result()
		require.NoError(t, err)
		exhausted := 0
		for _, e := range evs {
			if e.Values["event"] == "retries-exhausted" {
				exhausted++
			}
		}
		require.Equal(t, 4, exhausted, "slow, fatal, doomed and stuck spent their attempts; fatal-early did not")
		fams := scrape(t, b.url)
		require.Equal(t, float64(exhausted), value(fams, "drover_jobs_retries_exhausted_total", q))
	})

	t.Run("CountersMoveAsJobsFlow", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		fams := scrape(t, b.url)
		require.Zero(t, value(fams, "drover_jobs_completed_total", q))
		require.Equal(t, 1.0, value(fams, "drover_inspect_up", nil))

		startWorker(t, b, func(ctx context.Context, job *drover.Job) (any, error) {
			switch {
			case job.Name == "flaky" && job.AttemptsMade == 0:
				return nil, errors.New("once")
			case job.Name == "doomed":
				return nil, errors.New("always")
			case job.Name == "fatal":
				return nil, drover.Unrecoverable(errors.New("fatal"))
			}
			return "ok", nil
		}, drover.WorkerOptions{Concurrency: 4})
		for _, name := range []string{"ok", "ok", "flaky", "doomed", "fatal"} {
			_, err := b.queue.Add(ctx, name, nil, &drover.JobOptions{Attempts: 2})
			require.NoError(t, err)
		}
		waitCounter(t, b, "drover_jobs_completed_total", 3)
		waitCounter(t, b, "drover_jobs_failed_total", 2)
		// The queue gauges follow once discovery has seen the new queue.
		completed := map[string]string{"queue": "q", "state": "completed"}
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			fams = scrape(t, b.url+"/metrics")
			if value(fams, "drover_queue_jobs", completed) == 3 || time.Now().After(deadline) {
				break
			}
		}
		require.Equal(t, 2.0, value(fams, "drover_jobs_retried_total", q), "flaky and doomed each retried once")
		require.Equal(t, 1.0, value(fams, "drover_jobs_retries_exhausted_total", q), "doomed spent its budget; fatal did not")
		require.Equal(t, 7.0, value(fams, "drover_jobs_started_total", q))
		require.Equal(t, 7.0, value(fams, "drover_job_duration_seconds", q))
		require.Equal(t, 3.0, value(fams, "drover_job_duration_seconds", map[string]string{"queue": "q", "outcome": "completed"}))
		require.Equal(t, 3.0, value(fams, "drover_queue_jobs", map[string]string{"queue": "q", "state": "completed"}))
		require.Equal(t, 2.0, value(fams, "drover_queue_jobs", map[string]string{"queue": "q", "state": "failed"}))
		require.Equal(t, 0.0, value(fams, "drover_queue_paused", q))
		require.Equal(t, 0.0, value(fams, "drover_retry_storm", q))
		require.NotNil(t, fams["go_goroutines"])
	})

	t.Run("StalledAndLockLost", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		// A job left active without a lock, as a killed worker leaves it.
		k := b.prefix + ":q:"
		require.NoError(t, b.rdb.HSet(ctx, k+"orphan", "name", "orphan", "data", "{}", "opts", "{}", "timestamp", 1, "ats", 1).Err())
		require.NoError(t, b.rdb.RPush(ctx, k+"active", "orphan").Err())
		startWorker(t, b, func(ctx context.Context, job *drover.Job) (any, error) {
			if job.Name == "lose-lock" && job.StalledCount == 0 && job.AttemptsStarted == 1 {
				// Someone else's hand on the lock: the next renewal fails.
				b.rdb.Del(context.Background(), k+job.ID+":lock")
				<-ctx.Done()
				return nil, context.Cause(ctx)
			}
			return "ok", nil
		}, drover.WorkerOptions{StalledInterval: 50 * time.Millisecond, LockDuration: 200 * time.Millisecond})
		waitCounter(t, b, "drover_jobs_stalled_total", 1)
		_, err := b.queue.Add(ctx, "lose-lock", nil, nil)
		require.NoError(t, err)
		waitCounter(t, b, "drover_lock_renewals_failed_total", 1)
	})

	t.Run("DelayedAndStormGauges", func(t *testing.T) {
		t.Parallel()
		b := setup(t)
		jobs := make([]drover.BulkJob, 150)
		for n := range jobs {
			jobs[n] = drover.BulkJob{Name: "later", Opts: &drover.JobOptions{Delay: time.Minute}}
		}
		_, err := b.queue.AddBulk(ctx, jobs)
		require.NoError(t, err)
		require.NoError(t, b.queue.Pause(ctx))
		fams := scrape(t, b.url)
		require.Equal(t, 150.0, value(fams, "drover_delayed_jobs", q))
		require.Equal(t, 150.0, value(fams, "drover_queue_jobs", map[string]string{"queue": "q", "state": "delayed"}))
		require.Equal(t, 1.0, value(fams, "drover_delayed_clustering_ratio", q))
		require.Equal(t, 1.0, value(fams, "drover_retry_storm", q))
		require.Equal(t, 1.0, value(fams, "drover_queue_paused", q))
	})

	t.Run("WorkerHooksShareOneRegistration", func(t *testing.T) {
		t.Parallel()
		reg := prometheus.NewRegistry()
		h1 := metrics.WorkerHooks(reg, "a")
		h2 := metrics.WorkerHooks(reg, "b")
		h1.JobFinished(&drover.Job{}, drover.OutcomeCompleted, time.Millisecond, nil)
		h2.JobFinished(&drover.Job{}, drover.OutcomeCompleted, time.Millisecond, nil)
		h2.Stalled("x", 1)
		fams, err := reg.Gather()
		require.NoError(t, err)
		byName := map[string]*dto.MetricFamily{}
		for _, f := range fams {
			byName[f.GetName()] = f
		}
		require.Equal(t, 1.0, value(byName, "drover_jobs_completed_total", map[string]string{"queue": "a"}))
		require.Equal(t, 1.0, value(byName, "drover_jobs_completed_total", map[string]string{"queue": "b"}))
		require.Equal(t, 1.0, value(byName, "drover_jobs_stalled_total", map[string]string{"queue": "b"}))

		bad := prometheus.NewRegistry()
		bad.MustRegister(prometheus.NewCounter(prometheus.CounterOpts{Name: "drover_jobs_started_total", Help: "other"}))
		_, err = metrics.NewWorkerMetrics(bad, nil)
		require.Error(t, err)
	})
}

// TestNewWorkerMetricsBadInput: a nil Registerer or buckets out of order
// are errors naming the problem. The nil Registerer used to panic (nil
// pointer dereference); the buckets were accepted, and client_golang
// panicked ("histogram buckets must be in increasing order") at the first
// attempt a worker finished, in its JobFinished hook.
func TestNewWorkerMetricsBadInput(t *testing.T) {
	t.Parallel()
	require.NotPanics(t, func() {
		_, err := metrics.NewWorkerMetrics(nil, nil)
		require.EqualError(t, err, "metrics: NewWorkerMetrics needs a Registerer, got nil")
	})
	require.NotPanics(t, func() {
		_, err := metrics.NewWorkerMetrics(prometheus.NewRegistry(), &metrics.WorkerMetricsOptions{Buckets: []float64{1, 0.5}})
		require.EqualError(t, err, "metrics: WorkerMetricsOptions.Buckets must be in increasing order, got [1 0.5]")
	})
	// A lone NaN passed the order check (it compares nothing) and was taken.
	require.NotPanics(t, func() {
		_, err := metrics.NewWorkerMetrics(prometheus.NewRegistry(), &metrics.WorkerMetricsOptions{Buckets: []float64{math.NaN()}})
		require.EqualError(t, err, "metrics: WorkerMetricsOptions.Buckets must be numbers, got [NaN]")
	})
}

// TestNewQueueCollectorRefusesBadQueueNames: a CollectorOptions.Queues
// entry no queue can have ("", or one with ':') is refused by
// NewQueueCollector with an error naming it. Before, it was taken and the
// scrape silently had no series for it.
func TestNewQueueCollectorRefusesBadQueueNames(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ins.Close(context.Background())) })
	for name, want := range map[string]string{"": "queue name must not be empty", "a:b": `queue name "a:b" must not contain ':'`} {
		_, err := metrics.NewQueueCollector(ins, &metrics.CollectorOptions{Queues: []string{"ok", name}})
		require.ErrorIs(t, err, drover.ErrInvalidOption, "%q", name)
		require.ErrorContains(t, err, "metrics: CollectorOptions.Queues: ")
		require.ErrorContains(t, err, want)
	}
	_, err = metrics.NewQueueCollector(ins, &metrics.CollectorOptions{Queues: []string{"ok", "not-there-yet"}})
	require.NoError(t, err)
}
