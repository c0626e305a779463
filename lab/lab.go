package lab

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/idempotency"
	"github.com/seed40057009/drover/internal/logkey"
)

// Scenario is one failure reproduction.
type Scenario string

const (
	// ThrowAfterEffect: the processor writes the effect, then returns an
	// error; the job (attempts: 2) is retried and runs again.
	ThrowAfterEffect Scenario = "throw-after-effect"
	// KilledAfterEffect: a worker process writes the effect and is
	// SIGKILLed before it acknowledges the job; the job's lock expires, a
	// worker in the lab's process recovers it as stalled, and it runs again.
	KilledAfterEffect Scenario = "killed-after-effect"
	// DuplicateProducer: two producers submit the same business operation
	// at the same time. Without a job id that makes two jobs; a safe subject's
	// producers use a deterministic job id, so the second add reports
	// AddDuplicate and there is one job (and the ledger stands behind it).
	DuplicateProducer Scenario = "duplicate-producer"
)

// Scenarios lists every scenario, in the order the lab reports them.
func Scenarios() []Scenario {
	return []Scenario{ThrowAfterEffect, KilledAfterEffect, DuplicateProducer}
}

// ParseScenario returns the scenario called name.
func ParseScenario(name string) (Scenario, error) {
	for _, s := range Scenarios() {
		if string(s) == name {
			return s, nil
		}
	}
	return "", fmt.Errorf("lab: unknown scenario %q (want %s, %s or %s)", name, ThrowAfterEffect, KilledAfterEffect, DuplicateProducer)
}

// Subject is a processor under test: how it writes the effect of one
// business operation, and how to count the effects durably written.
// [DB.Subject] returns the built-in ones; a subject of your own lets the lab
// run the scenarios against your processor's effect.
type Subject struct {
	// Name labels the subject in the report (the mode column) and tells the
	// worker process of the killed-after-effect scenario which subject to
	// run. Required.
	Name string

	// Safe says the subject claims to write each effect once. The lab then
	// expects one effect in every scenario, and fails the run when it sees
	// more; and in the duplicate-producer scenario its producers add the job
	// with a deterministic job id. An unsafe subject is expected to write
	// the effect once per execution.
	Safe bool

	// Effect writes the effect of op. The lab calls it once per execution,
	// after recording the execution and before injecting the failure. Report
	// what it did with ObserveDo (instead of idempotency.Ledger.Do) or
	// ObserveEffect, so logs and the executions table show the claim.
	// Required.
	Effect func(ctx context.Context, op Operation) error

	// CountEffects returns how many effects of the operation key are
	// durably written, read from where Effect writes them. Required.
	CountEffects func(ctx context.Context, key string) (int, error)
}

func (s *Subject) validate() error {
	switch {
	case s.Name == "":
		return errors.New("lab: Subject.Name must not be empty")
	case strings.ContainsAny(s.Name, ": "):
		return fmt.Errorf("lab: Subject.Name must not contain ':' or spaces, got %q", s.Name)
	case s.Effect == nil:
		return fmt.Errorf("lab: Subject %q: Effect must be set", s.Name)
	case s.CountEffects == nil:
		return fmt.Errorf("lab: Subject %q: CountEffects must be set", s.Name)
	}
	return nil
}

// Operation is the business operation a lab job performs: one per run, the
// same for every execution and every producer of the run.
type Operation struct {
	// Key is the operation key, idempotency.OpKey("drover-lab", run,
	// scenario, subject, "order-42"): stable across executions and
	// producers, unique to the run.
	Key      string
	Run      string
	Scenario Scenario
	Subject  string
	// Job is the job being executed.
	Job *drover.Job
}

// jobData is the payload of a lab job.
type jobData struct {
	Run      string   `json:"run"`
	Scenario Scenario `json:"scenario"`
	Subject  string   `json:"subject"`
	Order    string   `json:"order"`
	OpKey    string   `json:"op_key"`
	Producer string   `json:"producer,omitempty"`
}

// The business operation every run performs, and the deterministic job id a
// safe producer derives from it. Each run has a queue of its own, so the id
// needs nothing else.
const (
	order         = "order-42"
	deterministic = "order-42"
)

func operationOf(job *drover.Job) (Operation, error) {
	var d jobData
	if err := job.DecodeData(&d); err != nil {
		return Operation{}, fmt.Errorf("lab: job %s is not a lab job: %w", job.ID, err)
	}
	if d.OpKey == "" {
		return Operation{}, fmt.Errorf("lab: job %s is not a lab job: no op_key", job.ID)
	}
	return Operation{Key: d.OpKey, Run: d.Run, Scenario: d.Scenario, Subject: d.Subject, Job: job}, nil
}

// Defaults of [Options].
const (
	// LockDurationDefault is short so that a killed worker's job is
	// recovered within about a second.
	LockDurationDefault = time.Second
	// StalledIntervalDefault is how often the recovering worker checks for
	// stalled jobs.
	StalledIntervalDefault = 250 * time.Millisecond
	// TimeoutDefault bounds one run (one scenario with one subject).
	TimeoutDefault = 30 * time.Second
)

// Options configure [Run]. A nil *Options means all defaults, which run
// every scenario except killed-after-effect (it needs WorkerCommand).
type Options struct {
	// Prefix of the lab's queue keys. Every run has a queue of its own,
	// named lab-<run>-<scenario>-<subject>.
	//
	// Defaults to drover.PrefixDefault ("bull").
	Prefix string

	// Scenarios to run, each with every subject.
	//
	// Defaults to all of Scenarios(), minus KilledAfterEffect when
	// WorkerCommand is nil.
	Scenarios []Scenario

	// Subjects to run the scenarios with.
	//
	// Defaults to the built-in unsafe and safe subjects of the DB given to
	// Run.
	Subjects []Subject

	// WorkerCommand returns the command that starts the worker process of
	// the killed-after-effect scenario: a process of a program that calls
	// RunWorker with spec, the same database and Redis, and the same
	// subjects. The lab connects the command's stdin and stdout itself (do
	// not set them) and kills the process. drover's own is `drover lab
	// worker`.
	//
	// Defaults to nil: the scenario cannot run, and asking for it is an error.
	WorkerCommand func(spec WorkerSpec) *exec.Cmd

	// LockDuration of the killed worker process: its job is recovered
	// about this long after the kill.
	//
	// Defaults to LockDurationDefault (1s).
	LockDuration time.Duration

	// StalledInterval of the lab's own workers.
	//
	// Defaults to StalledIntervalDefault (250ms).
	StalledInterval time.Duration

	// Timeout bounds each run; a run that takes longer fails.
	//
	// Defaults to TimeoutDefault (30s).
	Timeout time.Duration

	// KeepQueues leaves each run's queue in Redis, for a look with drover
	// jobs or the dashboard.
	//
	// Defaults to false: the queues are obliterated after the run.
	KeepQueues bool

	// Logger receives the processor lines of Observe ("processor start",
	// "processor finish") and the workers' logs.
	//
	// Defaults to nil, which discards.
	Logger *slog.Logger
}

func (o *Options) withDefaults(db *DB) (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Prefix == "" {
		r.Prefix = drover.PrefixDefault
	}
	if len(r.Scenarios) == 0 {
		for _, s := range Scenarios() {
			if s != KilledAfterEffect || r.WorkerCommand != nil {
				r.Scenarios = append(r.Scenarios, s)
			}
		}
	}
	if len(r.Subjects) == 0 {
		for _, name := range []string{SubjectUnsafe, SubjectSafe} {
			s, err := db.Subject(name)
			if err != nil {
				return r, err
			}
			r.Subjects = append(r.Subjects, s)
		}
	}
	r.LockDuration = cmpOr(r.LockDuration, LockDurationDefault)
	r.StalledInterval = cmpOr(r.StalledInterval, StalledIntervalDefault)
	r.Timeout = cmpOr(r.Timeout, TimeoutDefault)
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	return r, r.validate()
}

func cmpOr(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

func (o *Options) validate() error {
	switch {
	case o.LockDuration < 4*time.Millisecond:
		return fmt.Errorf("lab: Options.LockDuration must be at least 4ms, got %s", o.LockDuration)
	case o.StalledInterval < time.Millisecond:
		return fmt.Errorf("lab: Options.StalledInterval must be at least 1ms, got %s", o.StalledInterval)
	case o.Timeout < 0:
		return fmt.Errorf("lab: Options.Timeout must not be negative, got %s", o.Timeout)
	}
	seen := map[string]bool{}
	for i := range o.Subjects {
		if err := o.Subjects[i].validate(); err != nil {
			return err
		}
		if seen[o.Subjects[i].Name] {
			return fmt.Errorf("lab: Options.Subjects has %q twice", o.Subjects[i].Name)
		}
		seen[o.Subjects[i].Name] = true
	}
	for _, s := range o.Scenarios {
		if _, err := ParseScenario(string(s)); err != nil {
			return err
		}
		if s == KilledAfterEffect && o.WorkerCommand == nil {
			return fmt.Errorf("lab: scenario %s needs Options.WorkerCommand to start a worker process", s)
		}
	}
	return nil
}

// Expectation is what a run should show.
type Expectation struct {
	Executions   int `json:"executions"`
	Effects      int `json:"effects"`
	AttemptsMade int `json:"attempts_made"`
	StalledCount int `json:"stalled_count"`
	JobsCreated  int `json:"jobs_created"`
}

// Expect returns what a run of the scenario should show, for a safe or an
// unsafe subject. An unsafe subject writes the effect on every execution; a
// safe one writes it once.
func Expect(s Scenario, safe bool) Expectation {
	var e Expectation
	switch s {
	case ThrowAfterEffect:
		// Attempt 1 writes and throws, attempt 2 runs again.
		e = Expectation{Executions: 2, Effects: 2, AttemptsMade: 2, JobsCreated: 1}
	case KilledAfterEffect:
		// A stall recovery runs the job again without spending an attempt.
		e = Expectation{Executions: 2, Effects: 2, AttemptsMade: 1, StalledCount: 1, JobsCreated: 1}
	case DuplicateProducer:
		// Two jobs run once each; with a deterministic id there is one job.
		e = Expectation{Executions: 2, Effects: 2, AttemptsMade: 2, JobsCreated: 2}
		if safe {
			e = Expectation{Executions: 1, Effects: 1, AttemptsMade: 1, JobsCreated: 1}
		}
	}
	if safe {
		e.Effects = 1
	}
	return e
}

// Result is one run: one scenario with one subject.
type Result struct {
	Scenario Scenario `json:"scenario"`
	// Mode is the subject's name: unsafe, safe, or one of your own.
	Mode  string `json:"mode"`
	Safe  bool   `json:"safe"`
	Queue string `json:"queue"`
	OpKey string `json:"op_key"`

	// Executions counts the processor executions recorded in the database.
	Executions int `json:"executions"`
	// Effects counts the effects written, as the subject's CountEffects
	// reads them from the database.
	Effects int `json:"effects"`
	// DuplicatesSuppressed counts the executions whose claim found the key
	// already completed.
	DuplicatesSuppressed int `json:"duplicates_suppressed"`
	// AttemptsMade, AttemptsStarted and StalledCount add up the run's jobs'
	// atm, ats and stc, read from Redis.
	AttemptsMade    int `json:"attempts_made"`
	AttemptsStarted int `json:"attempts_started"`
	StalledCount    int `json:"stalled_count"`
	// JobsCreated counts the run's jobs in Redis.
	JobsCreated int `json:"jobs_created"`
	// Adds are the outcomes of the producers' adds (created, duplicate).
	Adds []string `json:"adds,omitempty"`
	// WorkerPID and WorkerExit describe the worker process the
	// killed-after-effect scenario killed.
	WorkerPID  int    `json:"worker_pid,omitempty"`
	WorkerExit string `json:"worker_exit,omitempty"`
	// ExecutionLog lists the recorded executions, oldest first.
	ExecutionLog []Execution `json:"execution_log"`
	// InProcess are the lab process's in-memory counters for the run: they
	// miss what the killed worker process did, which is why the lab counts
	// from the database.
	InProcess CounterValues `json:"in_process_counters"`

	Expected Expectation `json:"expected"`
	// OK says the run showed what was expected; Problems say what differed.
	OK       bool     `json:"ok"`
	Verdict  string   `json:"verdict"`
	Problems []string `json:"problems,omitempty"`
	// Error is what stopped the run early, if anything.
	Error     string `json:"error,omitempty"`
	ElapsedMS int64  `json:"elapsed_ms"`
}

// evaluate compares the counts with the expectation and sets OK, Problems
// and Verdict.
func (r *Result) evaluate() {
	e := r.Expected
	var problems []string
	if r.Error != "" {
		problems = append(problems, r.Error)
	}
	switch {
	case r.Executions < e.Executions:
		problems = append(problems, fmt.Sprintf("the failure was not reproduced: %d executions, expected %d", r.Executions, e.Executions))
	case r.Executions > e.Executions:
		problems = append(problems, fmt.Sprintf("%d executions, expected %d", r.Executions, e.Executions))
	}
	switch {
	case r.Effects == e.Effects:
	case r.Safe && r.Effects > 1:
		problems = append(problems, fmt.Sprintf("effect written %d times by a safe subject", r.Effects))
	default:
		problems = append(problems, fmt.Sprintf("%d effects, expected %d", r.Effects, e.Effects))
	}
	if r.JobsCreated != e.JobsCreated {
		problems = append(problems, fmt.Sprintf("%d jobs created, expected %d", r.JobsCreated, e.JobsCreated))
	}
	if r.AttemptsMade != e.AttemptsMade {
		problems = append(problems, fmt.Sprintf("%d attempts made, expected %d", r.AttemptsMade, e.AttemptsMade))
	}
	if r.StalledCount != e.StalledCount {
		problems = append(problems, fmt.Sprintf("stalled %d times, expected %d", r.StalledCount, e.StalledCount))
	}
	r.Problems = problems
	r.OK = len(problems) == 0
	switch {
	case !r.OK:
		r.Verdict = "FAIL: " + problems[0]
		if len(problems) > 1 {
			r.Verdict += fmt.Sprintf(" (+%d more)", len(problems)-1)
		}
	case r.Effects > 1:
		r.Verdict = fmt.Sprintf("ok: duplicate effect reproduced (%dx)", r.Effects)
	case r.Executions > r.Effects:
		r.Verdict = fmt.Sprintf("ok: effect once, %d duplicate execution(s) absorbed", r.Executions-r.Effects)
	default:
		r.Verdict = "ok: one job, effect once"
	}
}

// Report is the outcome of [Run].
type Report struct {
	// Run identifies the run: it is in every queue name and operation key.
	Run string `json:"run"`
	// Database is the database's dialect: postgres or sqlite.
	Database string   `json:"database"`
	Results  []Result `json:"results"`
	// OK is true when every result is.
	OK        bool  `json:"ok"`
	ElapsedMS int64 `json:"elapsed_ms"`
}

// Failed returns the results that were not OK.
func (r *Report) Failed() []Result {
	var out []Result
	for _, res := range r.Results {
		if !res.OK {
			out = append(out, res)
		}
	}
	return out
}

// Run runs every scenario with every subject against Redis and the
// database, all runs at once, each with a queue of its own, and reports what
// each showed. db must have the ledger (pgmigrate.Up) and the lab's tables
// (DB.CreateTables). An error means the lab could not run (bad options);
// a run that does not show what it should is a Result that is not OK, and
// Report.OK is false.
func Run(ctx context.Context, rdb redis.UniversalClient, db *DB, opts *Options) (*Report, error) {
	if rdb == nil || db == nil {
		return nil, errors.New("lab: Run needs a Redis client and a DB")
	}
	o, err := opts.withDefaults(db)
	if err != nil {
		return nil, err
	}
	r := &runner{rdb: rdb, db: db, opts: o, run: newRunID()}
	start := time.Now()
	report := &Report{Run: r.run, Database: db.Dialect()}
	type pair struct {
		sc   Scenario
		subj Subject
	}
	var pairs []pair
	for _, sc := range Scenarios() {
		if !slices.Contains(o.Scenarios, sc) {
			continue
		}
		for _, subj := range o.Subjects {
			pairs = append(pairs, pair{sc, subj})
		}
	}
	report.Results = make([]Result, len(pairs))
	var wg sync.WaitGroup
	for i, p := range pairs {
		wg.Go(func() { report.Results[i] = r.runOne(ctx, p.sc, p.subj) })
	}
	wg.Wait()
	report.OK = true
	for _, res := range report.Results {
		report.OK = report.OK && res.OK
	}
	report.ElapsedMS = time.Since(start).Milliseconds()
	return report, nil
}

func newRunID() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// runner runs the scenarios of one lab run.
type runner struct {
	rdb  redis.UniversalClient
	db   *DB
	opts Options
	run  string
}

var errRunTimeout = errors.New("run timed out")

func (r *runner) runOne(ctx context.Context, sc Scenario, subj Subject) Result {
	start := time.Now()
	res := Result{
		Scenario: sc, Mode: subj.Name, Safe: subj.Safe,
		Queue:    fmt.Sprintf("lab-%s-%s-%s", r.run, sc, subj.Name),
		OpKey:    idempotency.OpKey("drover-lab", r.run, string(sc), subj.Name, order),
		Expected: Expect(sc, subj.Safe),
	}

	q, err := drover.NewQueue(r.rdb, res.Queue, &drover.QueueOptions{Prefix: r.opts.Prefix})
	if err != nil {
		res.Error = err.Error()
		res.evaluate()
		return res
	}
	counters := &Counters{}
	runCtx, cancel := context.WithTimeoutCause(ctx, r.opts.Timeout, fmt.Errorf("%w after %s", errRunTimeout, r.opts.Timeout))
	data := jobData{Run: r.run, Scenario: sc, Subject: subj.Name, Order: order, OpKey: res.OpKey}
	switch sc {
	case ThrowAfterEffect:
		err = r.throwAfterEffect(runCtx, q, subj, data, counters)
	case KilledAfterEffect:
		err = r.killedAfterEffect(runCtx, q, subj, data, counters, &res)
	case DuplicateProducer:
		err = r.duplicateProducer(runCtx, q, subj, data, counters, &res)
	}
	cancel()
	if err != nil {
		res.Error = fmt.Sprintf("%s: %v", sc, err)
	}

	// Count from durable data, even after a failure: it says how far the run got.
	cctx, ccancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer ccancel()
	if err := r.collect(cctx, q, subj, &res); err != nil && res.Error == "" {
		res.Error = err.Error()
	}
	res.InProcess = counters.Values()
	if !r.opts.KeepQueues {
		if err := q.Obliterate(cctx, &drover.ObliterateOptions{Force: true}); err != nil {
			r.opts.Logger.WarnContext(ctx, "lab: obliterate queue", slog.String(logkey.Queue, res.Queue), slog.Any(logkey.Error, err))
		}
	}
	res.ElapsedMS = time.Since(start).Milliseconds()
	res.evaluate()
	return res
}

// collect reads the run's counts: executions and effects from the database,
// jobs and their counters from Redis.
func (r *runner) collect(ctx context.Context, q *drover.Queue, subj Subject, res *Result) error {
	execs, err := r.db.Executions(ctx, res.OpKey)
	if err != nil {
		return err
	}
	res.ExecutionLog = execs
	res.Executions = len(execs)
	for _, e := range execs {
		if e.Claim == claimExisted {
			res.DuplicatesSuppressed++
		}
	}
	if res.Effects, err = subj.CountEffects(ctx, res.OpKey); err != nil {
		return fmt.Errorf("lab: count effects of subject %s: %w", subj.Name, err)
	}
	states := append(slices.Clone(drover.DefaultCountStates), drover.StatePaused)
	jobs, err := q.GetJobs(ctx, states, 0, -1, true)
	if err != nil {
		return err
	}
	res.JobsCreated = len(jobs)
	for _, j := range jobs {
		res.AttemptsMade += j.AttemptsMade
		res.AttemptsStarted += j.AttemptsStarted
		res.StalledCount += j.StalledCount
	}
	return nil
}

// processor is the lab's processor for one subject: it records the
// execution, has the subject write the effect, records the claim, and then
// calls after, which injects the scenario's failure.
func (r *runner) processor(subj Subject, counters *Counters, after func(ctx context.Context, op Operation) error) drover.Processor {
	return labProcessor(r.db, subj, r.opts.Logger, counters, after)
}

func labProcessor(db *DB, subj Subject, logger *slog.Logger, counters *Counters, after func(ctx context.Context, op Operation) error) drover.Processor {
	proc := drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		op, err := operationOf(job)
		if err != nil {
			return nil, drover.Unrecoverable(err)
		}
		execID, err := db.recordExecution(ctx, op)
		if err != nil {
			return nil, err
		}
		if err := subj.Effect(ctx, op); err != nil {
			return nil, err
		}
		claim := claimOf(ctx)
		if claim != "" {
			if err := db.recordClaim(ctx, execID, claim); err != nil {
				return nil, err
			}
		}
		if after != nil {
			if err := after(ctx, op); err != nil {
				return nil, err
			}
		}
		return map[string]string{"op_key": op.Key, "claim": claim}, nil
	})
	return Observe(proc, &ObserveOptions{Logger: logger, Counters: counters, OpKey: func(job *drover.Job) string {
		var d jobData
		_ = job.DecodeData(&d)
		return d.OpKey
	}})
}

// work runs a worker in this process on q until n jobs have finished
// (completed or failed for good), then closes it.
func (r *runner) work(ctx context.Context, q *drover.Queue, proc drover.Processor, n int) error {
	finished := make(chan string, n+8)
	w, err := drover.NewWorker(r.rdb, q.Name(), proc, &drover.WorkerOptions{
		// The default LockDuration (30s): the lab's own workers must not
		// stall, only the process it kills.
		Prefix: r.opts.Prefix, Name: "drover-lab", Concurrency: 2, StalledInterval: r.opts.StalledInterval,
		Logger: r.opts.Logger,
		Hooks: &drover.WorkerHooks{JobFinished: func(job *drover.Job, outcome drover.Outcome, _ time.Duration, _ error) {
			if outcome == drover.OutcomeCompleted || outcome.Failed() {
				select {
				case finished <- job.ID:
				default:
				}
			}
		}},
	})
	if err != nil {
		return err
	}
	if err := w.Start(ctx); err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = w.Close(cctx)
	}()
	for done := 0; done < n; done++ {
		select {
		case <-finished:
		case <-ctx.Done():
			return fmt.Errorf("waiting for %d job(s) to finish, %d did: %w", n, done, context.Cause(ctx))
		}
	}
	return nil
}

func add(ctx context.Context, q *drover.Queue, data jobData, opts *drover.JobOptions) (*drover.AddResult, error) {
	res, err := q.Add(ctx, "lab."+string(data.Scenario), data, opts)
	if err != nil {
		return nil, fmt.Errorf("add job: %w", err)
	}
	return res, nil
}

// errInjected is the failure the throw-after-effect scenario injects.
var errInjected = errors.New("lab: injected failure after the effect")

func (r *runner) throwAfterEffect(ctx context.Context, q *drover.Queue, subj Subject, data jobData, counters *Counters) error {
	if _, err := add(ctx, q, data, &drover.JobOptions{Attempts: 2}); err != nil {
		return err
	}
	proc := r.processor(subj, counters, func(ctx context.Context, op Operation) error {
		if op.Job.AttemptsMade == 0 {
			return errInjected
		}
		return nil
	})
	return r.work(ctx, q, proc, 1)
}

func (r *runner) duplicateProducer(ctx context.Context, q *drover.Queue, subj Subject, data jobData, counters *Counters, res *Result) error {
	var opts *drover.JobOptions
	if subj.Safe {
		opts = &drover.JobOptions{JobID: deterministic}
	}
	// Two producers, each with a Queue handle of its own, at the same time.
	adds := make([]*drover.AddResult, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, producer := range []string{"producer-a", "producer-b"} {
		wg.Go(func() {
			pq, err := drover.NewQueue(r.rdb, q.Name(), &drover.QueueOptions{Prefix: r.opts.Prefix})
			if err != nil {
				errs[i] = err
				return
			}
			d := data
			d.Producer = producer
			adds[i], errs[i] = add(ctx, pq, d, opts)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	created := 0
	for _, a := range adds {
		res.Adds = append(res.Adds, a.Outcome.String())
		if a.Outcome == drover.AddCreated {
			created++
		}
	}
	return r.work(ctx, q, r.processor(subj, counters, nil), created)
}

// marshal is json.Marshal for values that cannot fail to encode.
func marshal(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}
