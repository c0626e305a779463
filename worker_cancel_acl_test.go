package drover_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestCancelWithoutPubSub: on a managed Redis whose user may not use
// pub/sub (an ACL without @pubsub), the worker cannot subscribe to cancel
// requests and CancelJob's script cannot PUBLISH. CancelJob of a running
// job still answers nil and the attempt stops: the request kept in Redis
// is read by the worker. It failed with the script's raw error ("ERR The
// user executing the script can't run this command ... @user_script:344")
// and the attempt ran on.
func TestCancelWithoutPubSub(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start()
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	require.NoError(t, srv.Client(t).Do(ctx, "ACL", "SETUSER", "app", "on", ">pw", "~*", "&*", "+@all", "-@pubsub").Err())
	app := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "app", Password: "pw"})
	t.Cleanup(func() { _ = app.Close() })
	q, err := drover.NewQueue(app, "q", nil)
	require.NoError(t, err)
	started, stopped := startLongJobWorker(t, app, nil)
	r, err := q.Add(ctx, "long", nil, nil)
	require.NoError(t, err)
	recv(t, started)
	require.NoError(t, q.CancelJob(ctx, r.Job.ID, "stop", nil))
	select {
	case cause := <-stopped:
		require.ErrorIs(t, cause, drover.ErrJobCancelled)
	case <-time.After(30 * time.Second):
		t.Fatal("the cancel never reached the attempt")
	}
}
