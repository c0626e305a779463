//go:build cluster

package clustertest_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/clustertest"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// lockedLog is a log buffer safe for the worker's goroutines.
type lockedLog struct {
	mu sync.Mutex
	b  []byte
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b = append(l.b, p...)
	return len(p), nil
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return string(l.b)
}

// TestSentinelWorkerWithoutINFO: a worker reaches a Sentinel-managed
// master as a user without @dangerous (no INFO, no CLIENT LIST), as a
// managed Redis hands out. It runs jobs, and its named connection is open,
// so BullMQ's getWorkers (here through an admin's client) lists it. The
// connection was never opened: reading the master's run_id (INFO) failed,
// so the worker opened it, was refused, closed it, every 5 s.
func TestSentinelWorkerWithoutINFO(t *testing.T) {
	ctx := context.Background()
	s := clustertest.SharedSentinel(t)
	for _, n := range s.Data {
		admin := redis.NewClient(&redis.Options{Addr: n.Addr})
		require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">app-password", "~*", "&*", "+@all", "-@dangerous").Err())
		t.Cleanup(func() {
			_ = admin.Do(context.Background(), "ACL", "DELUSER", "app").Err()
			_ = admin.Close()
		})
	}
	app := s.NewFailoverClient(&redis.FailoverOptions{Username: "app", Password: "app-password"})
	t.Cleanup(func() { _ = app.Close() })
	admin := s.NewFailoverClient(nil)
	t.Cleanup(func() { _ = admin.Close() })
	require.Error(t, app.Info(ctx, "server").Err(), "the app user may run INFO")
	prefix := clustertest.UniquePrefix()
	t.Cleanup(func() { redistest.DeletePrefix(context.Background(), admin, prefix) })

	var logs lockedLog
	q, err := drover.NewQueue(app, "acl", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	done := make(chan string, 10)
	w, err := drover.NewWorker(app, "acl", drover.ProcessorFunc(func(_ context.Context, j *drover.Job) (any, error) {
		done <- j.ID
		return nil, nil
	}), &drover.WorkerOptions{Prefix: prefix, Name: "acl-worker", Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { require.NoError(t, w.Close(context.Background())) })
	r, err := q.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	select {
	case id := <-done:
		require.Equal(t, r.Job.ID, id)
	case <-time.After(15 * time.Second):
		t.Fatalf("the job did not run; logs:\n%s", logs.String())
	}
	qa, err := drover.NewQueue(admin, "acl", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	testkit.WaitFor(t, 15*time.Second, "the worker listed", func() bool {
		ws, err := qa.GetWorkers(ctx)
		return err == nil && len(ws) == 1 && ws[0].Name == "acl-worker"
	})
	require.NotContains(t, logs.String(), "cannot name the worker's connection", logs.String())
}

// TestCLIOnAClusterWithoutINFO: the CLI given one node of a Redis Cluster
// as a user without @dangerous (no INFO) finds the cluster (CLUSTER INFO)
// and lists the queues of every master. It took the node for a single
// server, as INFO cluster was refused, and listed only the queues that
// node holds.
func TestCLIOnAClusterWithoutINFO(t *testing.T) {
	ctx := context.Background()
	c, rdb := clusterClient(t)
	for _, n := range c.Nodes {
		admin := redis.NewClient(&redis.Options{Addr: n.Addr})
		require.NoError(t, admin.Do(ctx, "ACL", "SETUSER", "app", "on", ">app-password", "~*", "&*", "+@all", "-@dangerous").Err())
		t.Cleanup(func() {
			_ = admin.Do(context.Background(), "ACL", "DELUSER", "app").Err()
			_ = admin.Close()
		})
	}
	prefix := testPrefix(t, rdb, false)
	_, tags, err := c.TagsByMaster(ctx, "acl", 1)
	require.NoError(t, err)
	var names []string
	for _, ts := range tags {
		name := "q{" + ts[0] + "}"
		names = append(names, name)
		_, err := newQueue(t, rdb, prefix, name).Add(ctx, "x", nil, nil)
		require.NoError(t, err)
	}
	addr := c.Addrs()[0]
	var got []cliQueue
	require.NoError(t, json.Unmarshal(runCLI(t, "queues", "--json", "--redis", "redis://app:app-password@"+addr, "--prefix", prefix), &got))
	listed := map[string]bool{}
	for _, q := range got {
		listed[q.Name] = true
	}
	for _, name := range names {
		require.True(t, listed[name], "queue %s not listed through %s: %v", name, addr, got)
	}
}
