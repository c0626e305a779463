//go:build cluster

package clustertest_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
)

// TestClusterWaitUntilFinished: WaitUntilFinished on a Redis Cluster, with
// the hash tag in the prefix and in the queue name: its transaction (job
// hash, completed and failed sets) and its stream reads stay in the queue's
// one slot.
func TestClusterWaitUntilFinished(t *testing.T) {
	t.Parallel()
	_, rdb := clusterClient(t)
	for _, tagged := range []bool{true, false} {
		prefix := testPrefix(t, rdb, tagged)
		name := "wq"
		if !tagged {
			name = "{wq}"
		}
		q := newQueue(t, rdb, prefix, name)
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		ok, err := q.Add(ctx, "ok", nil, &drover.JobOptions{RemoveOnComplete: &drover.Retention{Remove: true}})
		require.NoError(t, err)
		bad, err := q.Add(ctx, "bad", nil, nil)
		require.NoError(t, err)
		type answer struct {
			v   []byte
			err error
		}
		okAns, badAns := make(chan answer, 1), make(chan answer, 1)
		go func() { v, err := q.WaitUntilFinished(ctx, ok.Job.ID); okAns <- answer{v, err} }()
		go func() { v, err := bad.Job.WaitUntilFinished(ctx); badAns <- answer{v, err} }()
		time.Sleep(100 * time.Millisecond)
		startWorker(t, rdb, prefix, name, func(ctx context.Context, j *drover.Job) (any, error) {
			if j.Name == "bad" {
				return nil, errors.New("cluster says no")
			}
			return "yes", nil
		}, nil)
		a := <-okAns
		require.NoError(t, a.err)
		require.JSONEq(t, `"yes"`, string(a.v))
		a = <-badAns
		var fe *drover.JobFailedError
		require.ErrorAs(t, a.err, &fe)
		require.Equal(t, "cluster says no", fe.Reason)

		// Already failed: from the job hash.
		_, err = q.WaitUntilFinished(ctx, bad.Job.ID)
		require.ErrorAs(t, err, &fe)
		_, err = q.WaitUntilFinished(ctx, "missing")
		require.ErrorIs(t, err, drover.ErrJobNotFound)
	}
}
