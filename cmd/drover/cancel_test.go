package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestCancelCommand runs `drover cancel` as its own process (this test
// binary acts as drover, see TestMain) against a job a worker of this
// process runs: the cancel crosses processes through Redis only.
func TestCancelCommand(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	redisURL := "redis://" + redistest.Shared(t).Addr
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	started := make(chan string, 10)
	causes := make(chan error, 10)
	w, err := drover.NewWorker(rdb, "mail", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		started <- job.ID
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil, ctx.Err()
	}), &drover.WorkerOptions{Prefix: prefix, DrainDelay: 50 * time.Millisecond})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { require.NoError(t, w.Close(ctx)) })

	runDrover := func(args ...string) (string, string, error) {
		cmd := exec.Command(os.Args[0], append(args, "--redis", redisURL, "--prefix", prefix)...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}

	res, err := q.Add(ctx, "send", nil, &drover.JobOptions{Attempts: 3})
	require.NoError(t, err)
	id := res.Job.ID
	<-started
	out, errOut, err := runDrover("cancel", "mail", id, "--reason", "customer asked")
	require.NoError(t, err, "%s%s", out, errOut)
	require.Equal(t, "job "+id+" in mail cancelled (a queued job is failed; a running one's worker got the request)\n", out)
	require.ErrorIs(t, <-causes, drover.ErrJobCancelled)
	testkit.WaitFor(t, 10*time.Second, "job to fail", func() bool {
		s, err := q.GetJobState(ctx, id)
		require.NoError(t, err)
		return s == drover.StateFailed
	})
	job, err := q.GetJob(ctx, id)
	require.NoError(t, err)
	require.Equal(t, "cancelled: customer asked", job.FailedReason)

	// `drover job` shows the outcome and why the job failed for good.
	var buf bytes.Buffer
	m := Main{Stdout: &buf, Stderr: &buf}
	require.NoError(t, m.Run(ctx, []string{"job", "mail", id, "--redis", redisURL, "--prefix", prefix}))
	require.Contains(t, buf.String(), "failed for good: cancelled")
	require.Regexp(t, `#1 +cancelled .*cancelled: customer asked`, buf.String())

	// A job not running yet fails at once, without running.
	later, err := q.Add(ctx, "send", nil, &drover.JobOptions{Delay: time.Hour})
	require.NoError(t, err)
	out, errOut, err = runDrover("cancel", "mail", later.Job.ID, "--reason", "not needed")
	require.NoError(t, err, "%s%s", out, errOut)
	job, err = q.GetJob(ctx, later.Job.ID)
	require.NoError(t, err)
	require.Equal(t, "cancelled: not needed", job.FailedReason)
	require.Zero(t, job.AttemptsMade)

	// A finished job: refused, nothing changes.
	out, errOut, err = runDrover("cancel", "mail", id)
	require.Error(t, err, out)
	require.Contains(t, errOut, "it is failed, not running")
	out, errOut, err = runDrover("cancel", "mail")
	require.Error(t, err, out)
	require.Contains(t, errOut+out, "cancel needs <queue> <id>")
}

// TestCancelRetryNeedsARunningJob: `drover cancel <queue> <id> --retry` on
// a job not running said "... CancelOptions.Retry retries a running
// attempt", the Go option alone; the refusal says what --retry needs, and the job is
// left as it was.
func TestCancelRetryNeedsARunningJob(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	res, err := q.Add(ctx, "send", nil, nil)
	require.NoError(t, err)
	var out bytes.Buffer
	err = (&Main{Stdout: &out, Stderr: &out}).Run(ctx, []string{"cancel", "mail", res.Job.ID, "--retry",
		"--redis", "redis://" + redistest.Shared(t).Addr, "--prefix", prefix})
	require.Equal(t, 1, exitCode(err), "%v", err)
	require.ErrorIs(t, err, drover.ErrNotInState)
	require.ErrorContains(t, err, "--retry needs a running job")
	state, err := q.GetJobState(ctx, res.Job.ID)
	require.NoError(t, err)
	require.Equal(t, drover.StateWaiting, state)
}
