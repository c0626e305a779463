package drover

// Typed jobs: a Go type per kind of job, encoded as the job's data by the
// one data encoder, and a Processor that routes each job by its name to the
// function registered for that kind.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/seed40057009/drover/internal/jobcodec"
)

// JobArgs is the data of a typed job. Kind names the kind of job; it is
// stored as the job's name, which is how Node BullMQ code and the CLI see
// it, and how Kinds finds the function that processes it. Kind must return
// the same constant for every value of the type, the zero value included
// (declare it on the value receiver).
type JobArgs interface {
	Kind() string
}

// JobArgsWithOptions is a kind of job that brings its own job options
// (River's JobArgsWithInsertOpts): its attempts, backoff, timeout or
// deduplication live with its type instead of at every AddArgs call.
// JobOptions is called on the value being added, so it may derive a
// JobID (JobIDOf) or a Deduplication id from the job's own fields.
type JobArgsWithOptions interface {
	JobArgs
	// JobOptions returns the kind's options. nil = none. The caller of
	// AddArgs only reads them.
	JobOptions() *JobOptions
}

// AddArgs adds a typed job: its name is args.Kind() and its data is args,
// encoded as Add encodes any data (the JSON Node's JSON.stringify would
// write). It is Add otherwise, AddMiddleware included.
//
// When args is a JobArgsWithOptions, the fields opts leaves unset (zero)
// are taken from args.JobOptions(), and those both leave unset from
// QueueOptions.DefaultJobOptions, as usual; a bad field of the kind's
// options is an error naming the kind. Delay and RunAt count as one field
// (the schedule): a call that sets either keeps it, else the kind's is
// taken, e.g. a RunAt the kind derives from its own fields. Nil args, or
// args whose Kind is empty, are refused (errors.Is ErrInvalidData).
func (q *Queue) AddArgs(ctx context.Context, args JobArgs, opts *JobOptions) (*AddResult, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	if args == nil {
		return nil, fmt.Errorf("add to queue %q: %w: AddArgs needs args, got nil", q.name, ErrInvalidData)
	}
	// A nil pointer would panic in a Kind declared on the value receiver,
	// and encode as null.
	if v := reflect.ValueOf(args); v.Kind() == reflect.Pointer && v.IsNil() {
		return nil, fmt.Errorf("add to queue %q: %w: AddArgs needs args, got a nil %T", q.name, ErrInvalidData, args)
	}
	if err := checkKind(args); err != nil {
		return nil, fmt.Errorf("add to queue %q: %w", q.name, err)
	}
	opts, err := ArgsOptions(args, opts)
	if err != nil {
		return nil, fmt.Errorf("add job %q to queue %q: %w", args.Kind(), q.name, err)
	}
	return q.Add(ctx, args.Kind(), args, opts)
}

// ArgsOptions returns the options AddArgs adds args with: opts, with the
// fields it leaves unset (zero) taken from args.JobOptions() when args is a
// JobArgsWithOptions; opts itself otherwise. The result is a copy when it
// differs: neither opts nor the kind's options are written. Use it where a
// typed job is added another way (a BulkJob, a FlowJob, an outbox row).
// The kind's options must be valid on their own: a bad field is an error
// naming the type (errors.Is ErrInvalidOption or ErrInvalidJobID). An
// empty Kind is an error too (errors.Is ErrInvalidData): the job would be
// named "", which no Kinds can route (Work refuses an empty kind); so are
// nil args and a nil pointer.
func ArgsOptions(args JobArgs, opts *JobOptions) (*JobOptions, error) {
	if err := checkKind(args); err != nil {
		return nil, err
	}
	wo, ok := args.(JobArgsWithOptions)
	if !ok {
		return opts, nil
	}
	k := wo.JobOptions()
	if k == nil {
		return opts, nil
	}
	if err := k.validate(); err != nil {
		return nil, fmt.Errorf("the options of kind %q (%T.JobOptions): %w", args.Kind(), args, err)
	}
	// merged fills what defaults may set; a kind also sets the per-job
	// fields (JobID, Deduplication, Timestamp), e.g. from its own values.
	r := opts.merged(k)
	r.JobID = cmp.Or(r.JobID, k.JobID)
	r.Deduplication = cmp.Or(r.Deduplication, k.Deduplication)
	if r.Timestamp.IsZero() {
		r.Timestamp = k.Timestamp
	}
	return &r, nil
}

// checkKind refuses args whose Kind is empty: a typed job so named could
// never be routed to its function (Work refuses to register an empty kind).
func checkKind(args JobArgs) error {
	if args == nil {
		return fmt.Errorf("%w: a typed job needs args, got nil", ErrInvalidData)
	}
	// A nil pointer would panic in a Kind declared on the value receiver.
	if v := reflect.ValueOf(args); v.Kind() == reflect.Pointer && v.IsNil() {
		return fmt.Errorf("%w: a typed job needs args, got a nil %T", ErrInvalidData, args)
	}
	if args.Kind() == "" {
		return fmt.Errorf("%w: %T.Kind() is empty: a typed job needs a kind, its name, which Kinds routes it by", ErrInvalidData, args)
	}
	return nil
}

// WorkFunc processes one typed job: args is the job's data decoded into T.
type WorkFunc[T JobArgs] func(ctx context.Context, job *Job, args T) (any, error)

// Kinds is a Processor that runs each job with the function registered for
// its name by Work, so one Worker serves many kinds of jobs. A job whose
// name no function is registered for runs Default; without one, the attempt
// fails (and is retried as the job's options say: a newer worker that
// knows the kind may take it). The zero Kinds is ready to use; register
// every kind before the worker starts.
type Kinds struct {
	// Default processes the jobs of no registered kind: untyped jobs keep
	// working next to typed ones. nil = such jobs fail.
	Default Processor

	procs map[string]ProcessorFunc
	opts  map[string]*KindOptions // by kind; only kinds registered with options
	err   error                   // the first registration mistake, reported by NewWorker
}

// KindOptions are how a worker runs one kind of job (River's Worker.Timeout
// and NextRetry): settings of the worker, not of the job, so a Node BullMQ
// worker taking a job of the kind does not apply them. They take effect in
// a Worker given the *Kinds itself (not a function wrapping it). Nil means
// none.
type KindOptions struct {
	// Timeout bounds each attempt of the kind's jobs, as
	// WorkerOptions.JobTimeout does (the processor's context is cancelled
	// with cause ErrJobTimedOut and the attempt fails, retried per the job's
	// Attempts). A job's own JobOptions.Timeout wins over it, and it wins
	// over WorkerOptions.JobTimeout. 0 = none; else at least 1ms.
	Timeout time.Duration
	// Backoff spaces the retries of the kind's jobs that carry no
	// JobOptions.Backoff of their own, which BullMQ retries at once. It is
	// called as a custom strategy is (backoffType ""), so BackoffStop fails
	// the job for good; how many attempts a job gets is still its Attempts
	// (set them with JobArgsWithOptions). A job's own Backoff wins over
	// it. nil = retry at once.
	Backoff BackoffFunc
}

// validate names the kind and the bad field.
func (o *KindOptions) validate(kind string) error {
	switch {
	case o.Timeout < 0:
		return optionError("KindOptions.Timeout of kind %q must not be negative, got %s", kind, o.Timeout)
	case o.Timeout > 0 && o.Timeout < time.Millisecond:
		return optionError("KindOptions.Timeout of kind %q must be at least 1ms, got %s", kind, o.Timeout)
	}
	return nil
}

// Work registers fn for the jobs whose name is T's Kind. Before fn runs, the
// job's data is decoded into a T; data that does not decode (a field of the
// wrong type, not JSON) fails the attempt as unrecoverable, with an error
// that names the job, the type and the field and wraps ErrInvalidData,
// since no retry can fix it. Data that is JSON null (Node's
// queue.add(name, null)) fails the same way whatever T is: it is no T,
// and T's zero value would pass a job added without data for one whose
// fields are all empty (Node's queue.add(name) stores {}, which decodes).
// T may be a pointer type (fn then gets a pointer to the decoded data,
// never nil). Registering a kind twice, or an empty kind,
// or a T whose zero value's Kind panics, is a mistake NewWorker reports
// (and Process fails every attempt with, see there).
func Work[T JobArgs](k *Kinds, fn WorkFunc[T]) { WorkWith(k, fn, nil) }

// WorkWith is Work with options for how the worker runs the kind: a time
// limit per attempt and a retry policy (KindOptions). A bad option is a
// registration mistake NewWorker reports, naming the kind and the field.
func WorkWith[T JobArgs](k *Kinds, fn WorkFunc[T], opts *KindOptions) {
	kind, err := KindOf[T]()
	switch {
	case err != nil:
		k.fail(fmt.Errorf("drover.Work: %w: declare Kind on the value receiver, returning a constant", err))
		return
	case fn == nil:
		k.fail(fmt.Errorf("drover.Work: nil function for kind %q", kind))
		return
	case kind == "":
		k.fail(fmt.Errorf("drover.Work: %s.Kind() is empty", typeName[T]()))
		return
	}
	if _, dup := k.procs[kind]; dup {
		k.fail(fmt.Errorf("drover.Work: kind %q registered twice (the second time for %s)", kind, typeName[T]()))
		return
	}
	if opts != nil {
		if err := opts.validate(kind); err != nil {
			k.fail(err)
			return
		}
		if k.opts == nil {
			k.opts = make(map[string]*KindOptions)
		}
		o := *opts
		k.opts[kind] = &o
	}
	if k.procs == nil {
		k.procs = make(map[string]ProcessorFunc)
	}
	k.procs[kind] = func(ctx context.Context, job *Job) (any, error) {
		// JSON null is no T: json.Unmarshal would leave a pointer T nil and
		// any other T its zero value, and fn could not tell a job added with
		// no data from one whose fields are all empty.
		if jobcodec.IsNull(job.Data) {
			return nil, Unrecoverable(fmt.Errorf("%w: job %s (%q): data does not decode as %s: the data is null", ErrInvalidData, job.ID, job.Name, typeName[T]()))
		}
		var args T
		if err := json.Unmarshal(job.Data, &args); err != nil {
			return nil, Unrecoverable(dataError[T](job, err))
		}
		return fn(ctx, job, args)
	}
}

// KindOf is the kind Work registers T under: T's Kind, asked of T's zero
// value, or for a pointer type of a pointer to its element's zero value (a
// value method called through a nil pointer panics). A Kind that panics
// anyway (an interface type as T, a method that reads through a nil field)
// is reported as an error. Test helpers that look jobs up by kind
// (drovertest.RequireAddedArgs) ask it the same way.
func KindOf[T JobArgs]() (kind string, err error) {
	var zero T
	if rt := reflect.TypeFor[T](); rt.Kind() == reflect.Pointer {
		zero = reflect.New(rt.Elem()).Interface().(T)
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%s.Kind() panicked on a zero value (%v)", typeName[T](), r)
		}
	}()
	return zero.Kind(), nil
}

func (k *Kinds) fail(err error) {
	if k.err == nil {
		k.err = err
	}
}

// Process runs the function registered for job.Name, or Default. After a
// registration mistake (which NewWorker reports when given the *Kinds, but
// cannot see behind a method value such as ProcessorFunc(k.Process)) it
// runs nothing: every attempt fails with the mistake, and is retried as the
// job's options say, so a corrected worker can take the job.
func (k *Kinds) Process(ctx context.Context, job *Job) (any, error) {
	if job == nil {
		return nil, optionError("Kinds.Process needs a job, got nil")
	}
	if err := k.validate(); err != nil {
		return nil, fmt.Errorf("job %s (%q) not run: %w", job.ID, job.Name, err)
	}
	if p, ok := k.procs[job.Name]; ok {
		return p(ctx, job)
	}
	if k.Default != nil {
		return k.Default.Process(ctx, job)
	}
	return nil, fmt.Errorf("no processor for job %s named %q in this worker (it knows %s)", job.ID, job.Name, k.known())
}

// known lists the registered kinds for an error message.
func (k *Kinds) known() string {
	if len(k.procs) == 0 {
		return "no kinds"
	}
	names := make([]string, 0, len(k.procs))
	for n := range k.procs {
		names = append(names, fmt.Sprintf("%q", n))
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// validate reports the first registration mistake (NewWorker calls it),
// or a nil *Kinds, or a Default that is a nil function: either would
// panic on the first job.
func (k *Kinds) validate() error {
	switch {
	case k == nil:
		return optionError("the Processor is a nil *drover.Kinds (declare a drover.Kinds and pass its address)")
	case k.err != nil:
		return k.err
	}
	if f, ok := k.Default.(ProcessorFunc); ok && f == nil {
		return optionError("Kinds.Default is a nil ProcessorFunc (leave Default nil for none)")
	}
	return nil
}

// kindOptions are the options the kind named name was registered with, nil
// for none (NewWorker reads them through the kindOptioner interface).
func (k *Kinds) kindOptions(name string) *KindOptions {
	if k == nil {
		return nil
	}
	return k.opts[name]
}

// kindOptioner is a Processor with per-kind options: *Kinds.
type kindOptioner interface {
	kindOptions(name string) *KindOptions
}

// dataError explains why a job's data does not decode into T, naming the
// job, the type and, when known, the field, never the data itself (it may
// hold personal data and ends up in failedReason and logs).
func dataError[T any](job *Job, err error) error {
	where := fmt.Sprintf("job %s (%q): data does not decode as %s", job.ID, job.Name, typeName[T]())
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te) && te.Field != "":
		return fmt.Errorf("%w: %s: field %q is a JSON %s, want %s", ErrInvalidData, where, te.Field, te.Value, te.Type)
	case errors.As(err, &te):
		return fmt.Errorf("%w: %s: the data is a JSON %s, want %s", ErrInvalidData, where, te.Value, te.Type)
	case errors.As(err, &se):
		return fmt.Errorf("%w: %s: not valid JSON at byte %d", ErrInvalidData, where, se.Offset)
	case len(job.Data) == 0:
		return fmt.Errorf("%w: %s: the job has no data", ErrInvalidData, where)
	}
	return fmt.Errorf("%w: %s: %w", ErrInvalidData, where, err)
}

// typeName is T's name with its package, e.g. "main.Email".
func typeName[T any]() string {
	return reflect.TypeFor[T]().String()
}
