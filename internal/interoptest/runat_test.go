package interoptest_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestInteropRunAt: a job drover adds with JobOptions.RunAt is, to Node
// BullMQ, an ordinary delayed job (its getters list it as delayed, with a
// delay that ends at RunAt), and a Node worker runs it once RunAt has passed,
// not before.
func TestInteropRunAt(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()
	b := setup(t)

	runAt := time.Now().Add(400 * time.Millisecond).Truncate(time.Millisecond)
	res, err := b.dq.Add(ctx, "at", map[string]any{"n": 1}, &drover.JobOptions{RunAt: runAt})
	require.NoError(t, err)
	id := res.Job.ID

	nj, err := b.oracle.GetJob(ctx, b.prefix, queueName, id)
	require.NoError(t, err)
	require.Equal(t, runAt.UnixMilli(), nj.Timestamp+nj.Delay, "Node's timestamp + delay is RunAt")
	require.EqualValues(t, nj.Delay, nj.Opts["delay"])
	state, err := b.oracle.GetState(ctx, b.prefix, queueName, id)
	require.NoError(t, err)
	require.Equal(t, "delayed", state)
	ids, err := b.oracle.GetJobs(ctx, b.prefix, queueName, []string{"delayed"}, 0, -1, true)
	require.NoError(t, err)
	require.Equal(t, []string{id}, ids)

	var got string
	testkit.WaitFor(t, waitLong, "a Node worker to run the job", func() bool {
		got, err = b.oracle.StepWork(ctx, b.prefix, queueName, bullmqoracle.Echo())
		require.NoError(t, err)
		return got != ""
	})
	require.Equal(t, id, got)
	nj, err = b.oracle.GetJob(ctx, b.prefix, queueName, id)
	require.NoError(t, err)
	require.NotNil(t, nj.ProcessedOn)
	require.GreaterOrEqual(t, *nj.ProcessedOn, runAt.UnixMilli(), "run no earlier than RunAt")
	state, err = b.oracle.GetState(ctx, b.prefix, queueName, id)
	require.NoError(t, err)
	require.Equal(t, "completed", state)
}
