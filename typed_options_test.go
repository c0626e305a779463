package drover_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// Charge is a kind that brings its own options: attempts, backoff, a
// timeout and a deduplication id made from its own fields.
type Charge struct {
	Invoice string `json:"invoice"`
}

func (Charge) Kind() string { return "charge" }

// chargeBackoff is in every Charge's options: AddArgs must never write it.
var chargeBackoff = &drover.Backoff{Type: drover.BackoffFixed, Delay: time.Second}

func (c Charge) JobOptions() *drover.JobOptions {
	return &drover.JobOptions{Attempts: 3, Backoff: chargeBackoff, Timeout: 5 * time.Second, KeepLogs: 10,
		Deduplication: &drover.Deduplication{ID: "charge:" + c.Invoice}}
}

// BadKind's options are invalid.
type BadKind struct{}

func (BadKind) Kind() string                   { return "bad" }
func (BadKind) JobOptions() *drover.JobOptions { return &drover.JobOptions{Attempts: -1} }

// NoOptions implements the interface and returns nil.
type NoOptions struct{}

func (NoOptions) Kind() string                   { return "none" }
func (NoOptions) JobOptions() *drover.JobOptions { return nil }

// TestAddArgsKindOptions: AddArgs of a JobArgsWithOptions fills what the
// call's options leave unset from the kind's, and what both leave unset from
// QueueOptions.DefaultJobOptions; the stored options are what Node reads
// (attempts, backoff, timeout, de); the dedup id derived from the value
// dedups a second add of the same invoice. A kind with bad options is
// refused naming the type, and nothing is written.
func TestAddArgsKindOptions(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "kinds", &drover.QueueOptions{Prefix: prefix,
		DefaultJobOptions: &drover.JobOptions{Priority: 4, KeepLogs: 20, Attempts: 9}})
	require.NoError(t, err)

	res, err := q.AddArgs(ctx, Charge{Invoice: "A-1"}, nil)
	require.NoError(t, err)
	require.Equal(t, drover.AddCreated, res.Outcome)
	job, err := q.GetJob(ctx, res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, 3, job.Opts.Attempts, "the kind's over the queue's default")
	require.Equal(t, &drover.Backoff{Type: drover.BackoffFixed, Delay: time.Second}, job.Opts.Backoff)
	require.Equal(t, 5*time.Second, job.Opts.Timeout)
	require.Equal(t, 10, job.Opts.KeepLogs)
	require.Equal(t, 4, job.Opts.Priority, "the queue's default where the kind sets none")
	require.Equal(t, "charge:A-1", job.Opts.Deduplication.ID)

	again, err := q.AddArgs(ctx, Charge{Invoice: "A-1"}, nil)
	require.NoError(t, err)
	require.Equal(t, drover.AddDeduplicated, again.Outcome)
	require.Equal(t, res.Job.ID, again.Job.ID)

	mine := &drover.JobOptions{Attempts: 5, JobID: "b-2"}
	res, err = q.AddArgs(ctx, Charge{Invoice: "B-2"}, mine)
	require.NoError(t, err)
	require.Equal(t, "b-2", res.Job.ID)
	job, err = q.GetJob(ctx, "b-2")
	require.NoError(t, err)
	require.Equal(t, 5, job.Opts.Attempts, "the call's over the kind's")
	require.Equal(t, 5*time.Second, job.Opts.Timeout)
	require.Equal(t, "charge:B-2", job.Opts.Deduplication.ID)
	require.Equal(t, &drover.JobOptions{Attempts: 5, JobID: "b-2"}, mine, "the caller's options are not written")
	require.Equal(t, &drover.Backoff{Type: drover.BackoffFixed, Delay: time.Second}, chargeBackoff, "the kind's are not either")

	res, err = q.AddArgs(ctx, NoOptions{}, nil)
	require.NoError(t, err)
	require.Equal(t, 9, res.Job.Opts.Attempts, "nil kind options: the queue's defaults")

	before, err := rdb.Keys(ctx, prefix+":*").Result()
	require.NoError(t, err)
	_, err = q.AddArgs(ctx, BadKind{}, nil)
	require.ErrorIs(t, err, drover.ErrInvalidOption)
	require.EqualError(t, err, `add job "bad" to queue "kinds": the options of kind "bad" (drover_test.BadKind.JobOptions): `+
		`invalid option: JobOptions.Attempts must not be negative, got -1`)
	after, err := rdb.Keys(ctx, prefix+":*").Result()
	require.NoError(t, err)
	require.ElementsMatch(t, before, after, "a refused kind writes nothing")

	// ArgsOptions, for typed jobs added another way (AddBulk here).
	o, err := drover.ArgsOptions(Charge{Invoice: "C-3"}, &drover.JobOptions{Priority: 1})
	require.NoError(t, err)
	out, err := q.AddBulk(ctx, []drover.BulkJob{{Name: Charge{}.Kind(), Data: Charge{Invoice: "C-3"}, Opts: o}})
	require.NoError(t, err)
	require.Equal(t, 1, out[0].Job.Opts.Priority)
	require.Equal(t, "charge:C-3", out[0].Job.Opts.Deduplication.ID)
	plain := &drover.JobOptions{Priority: 2}
	o, err = drover.ArgsOptions(Welcome{}, plain)
	require.NoError(t, err)
	require.Same(t, plain, o, "a kind without options: opts as given")
}
