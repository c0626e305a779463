// Package metricset is the one definition of drover's metrics: the worker
// counters and attempt-duration histogram (what the worker hooks count) and
// the queue gauges (what an inspect.Inspector reads at scrape time), with
// their names, help texts, units and labels, and the rules that say which
// counter an attempt moves.
//
// Three exporters use it: package metrics registers the metrics with
// Prometheus' client_golang, droverotel makes them OpenTelemetry
// instruments, and the dashboard and `drover demo` serve them with this
// package's own Prometheus text exposition (Handler, Workers, Runtime). That
// last one is why this package exists apart from package metrics: the drover
// command must not compile client_golang and protobuf, a tenth of its first
// build (README, "First run").
//
// It sits above package inspect (it reads the queue gauges through an
// Inspector), so unlike the other internal packages it imports a public one.
package metricset

import (
	"errors"
	"time"

	"github.com/seed40057009/drover"
)

// Namespace prefixes every drover metric name.
const Namespace = "drover"

// Def is one metric: its name without Namespace, its help text, its
// OpenTelemetry unit and its label names.
type Def struct {
	Name   string
	Help   string
	Unit   string
	Labels []string
}

// FullName is Namespace_Name.
func (d Def) FullName() string { return Namespace + "_" + d.Name }

// Units of the OpenTelemetry instruments.
const (
	UnitJobs    = "{job}"
	UnitSeconds = "s"
)

// Counter is one of the worker counters.
type Counter int

// The worker counters, in the order Counters lists them.
const (
	Started Counter = iota
	Completed
	Failed
	Retried
	Delayed
	RetriesExhausted
	Stalled
	LockLost
	Cancelled
	TimedOut

	numCounters
)

// NumCounters is how many worker counters there are.
const NumCounters = int(numCounters)

var queueLabel = []string{"queue"}

var counterDefs = [numCounters]Def{
	Started:          {Name: "jobs_started_total", Help: "Attempts started by drover workers."},
	Completed:        {Name: "jobs_completed_total", Help: "Jobs completed by drover workers."},
	Failed:           {Name: "jobs_failed_total", Help: "Jobs failed for good (moved to failed) by drover workers."},
	Retried:          {Name: "jobs_retried_total", Help: "Failed attempts that will be retried (at once or after a backoff)."},
	Delayed:          {Name: "jobs_delayed_total", Help: "Attempts that put their job back in the delayed set without spending an attempt (drover.Delay)."},
	RetriesExhausted: {Name: "jobs_retries_exhausted_total", Help: "Jobs failed for good by their last attempt, whatever ended it (BullMQ's retries-exhausted event)."},
	Stalled:          {Name: "jobs_stalled_total", Help: "Stalled jobs recovered by the workers' stalled checkers."},
	LockLost:         {Name: "lock_renewals_failed_total", Help: "Running jobs whose lock a worker failed to renew (the job was lost to the stalled checker or another worker)."},
	Cancelled:        {Name: "attempts_cancelled_total", Help: "Attempts ended by Queue.CancelJob, whether the job then failed for good or was retried."},
	TimedOut:         {Name: "attempts_timed_out_total", Help: "Attempts that ran past their timeout, whether the job then failed for good or was retried."},
}

// Def is the counter's definition (label: queue; unit: jobs).
func (c Counter) Def() Def {
	d := counterDefs[c]
	d.Unit = UnitJobs
	d.Labels = queueLabel
	return d
}

// Counters lists every worker counter.
func Counters() []Counter {
	cs := make([]Counter, numCounters)
	for i := range cs {
		cs[i] = Counter(i)
	}
	return cs
}

// Duration is the attempt-duration histogram (labels queue and outcome).
var Duration = Def{
	Name:   "job_duration_seconds",
	Help:   "How long attempts ran, by outcome (drover.Outcome's names: completed, retried, retry-delayed, delayed, requeued, failed, failed-unrecoverable, retries-exhausted, cancelled, timed-out).",
	Unit:   UnitSeconds,
	Labels: []string{"queue", "outcome"},
}

// DefaultBuckets are the duration histogram's default upper bounds in
// seconds: Prometheus' default buckets (client_golang's DefBuckets).
func DefaultBuckets() []float64 {
	return []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}
}

// Finished calls add for each counter that an attempt of job which ended
// with outcome and err moves by one: at most one of completed, delayed,
// retried and failed; retries-exhausted on the last attempt's failure;
// cancelled or timed-out when err says so. OutcomeUnknown (nothing written)
// moves none.
//
// The last attempt's failure is any failure for good that spent the job's
// last attempt, as the retries-exhausted event Redis gets then says
// (BullMQ writes it when attemptsMade reaches attempts): a timeout, a
// cancel or an unrecoverable error ending the last attempt count, not only
// OutcomeRetriesExhausted (a plain error's).
func Finished(job *drover.Job, outcome drover.Outcome, err error, add func(Counter)) {
	switch {
	case outcome == drover.OutcomeCompleted:
		add(Completed)
	case outcome == drover.OutcomeDelayed:
		add(Delayed)
	case outcome.Retried():
		add(Retried)
	case outcome.Failed():
		add(Failed)
	}
	if outcome == drover.OutcomeRetriesExhausted || (outcome.Failed() && lastAttempt(job)) {
		add(RetriesExhausted)
	}
	switch {
	case errors.Is(err, drover.ErrJobCancelled):
		add(Cancelled)
	case errors.Is(err, drover.ErrJobTimedOut):
		add(TimedOut)
	}
}

// lastAttempt reports whether the attempt of job that just ended was its
// last one: job.AttemptsMade counts the attempts before it, and a job
// without Attempts runs once.
func lastAttempt(job *drover.Job) bool {
	return job != nil && job.AttemptsMade+1 >= job.Opts.Attempts
}

// Hooks are worker hooks that count through count (one more of the
// counter) and observe (an attempt's duration by its outcome's name): what
// every worker-metrics exporter hangs on drover.WorkerOptions.Hooks.
func Hooks(count func(Counter), observe func(outcome string, seconds float64)) *drover.WorkerHooks {
	return &drover.WorkerHooks{
		JobStarted: func(*drover.Job) { count(Started) },
		JobFinished: func(job *drover.Job, outcome drover.Outcome, took time.Duration, err error) {
			Finished(job, outcome, err, count)
			observe(outcome.String(), took.Seconds())
		},
		LockLost: func(*drover.Job, string) { count(LockLost) },
		Stalled:  func(string, int) { count(Stalled) },
	}
}
