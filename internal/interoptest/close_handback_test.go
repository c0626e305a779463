package interoptest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
)

// TestInteropCloseHandsBackJob: a drover worker whose Close deadline
// passes hands its running job back to wait, and an idle Node worker,
// blocked on the marker, takes it at once. For a prioritized job the
// move-back wrote no marker (as BullMQ's rate-limit move-back, which drover
// shares), so the Node worker only saw it once its drainDelay ran out: 5 s
// by default, 60 s here, where the job would have been recovered by a
// stalled check had drover simply died.
func TestInteropCloseHandsBackJob(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	for _, prio := range []int{0, 3} {
		t.Run(fmt.Sprintf("Priority%d", prio), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			ctx := context.Background()
			started := make(chan struct{})
			w, err := drover.NewWorker(b.rdb, queueName, drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
				close(started)
				<-ctx.Done()
				return nil, context.Cause(ctx)
			}), &drover.WorkerOptions{Prefix: b.prefix, Name: workerName})
			require.NoError(t, err)
			require.NoError(t, w.Start(ctx))
			id := b.add(t, nodeImpl, jobSpec{name: "p", data: payload("p", 0), priority: prio})
			<-started
			nodeID := b.prefix + "-idle"
			require.NoError(t, b.oracle.StartWorker(ctx, b.prefix, queueName, bullmqoracle.WorkerOptions{
				ID: nodeID, Name: workerName, Behavior: bullmqoracle.Echo(), DrainDelay: time.Minute,
			}))
			t.Cleanup(func() { _ = b.oracle.StopWorker(context.Background(), nodeID, true) })
			// Time for the Node worker to find nothing and block on the marker.
			time.Sleep(time.Second)
			cctx, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
			defer cancel()
			require.NoError(t, w.Close(cctx))
			b.waitEventsWithin(t, waitLong, 1, func(e drover.Event) bool { return isCompleted(e) && e.JobID == id })
			nj := assertJobAgree(t, b, id)
			require.EqualValues(t, 2, nj.AttemptsStarted, "drover's run, handed back, and Node's")
			require.EqualValues(t, 1, nj.AttemptsMade)
		})
	}
}
