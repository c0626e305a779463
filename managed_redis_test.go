package drover_test

import (
	"context"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/internal/testkit/traffic"
)

// managedRedis starts a server as a managed Redis service hands it out:
// CONFIG renamed away (rename-command CONFIG "") and an application user
// without the @dangerous commands (INFO, CLIENT, KEYS, CONFIG, ...).
// It returns the admin client (default user) and the application user's.
func managedRedis(t *testing.T, acl ...string) (admin, app *redis.Client) {
	t.Helper()
	srv, err := redistest.Start("--rename-command", "CONFIG", "")
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	admin = srv.Client(t)
	ctx := context.Background()
	args := []any{"ACL", "SETUSER", "app", "on", ">app-password", "~*", "&*", "+@all", "-@dangerous"}
	for _, a := range acl {
		args = append(args, a)
	}
	require.NoError(t, admin.Do(ctx, args...).Err())
	app = redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "app", Password: "app-password",
		ReadTimeout: 15 * time.Second, WriteTimeout: 15 * time.Second})
	t.Cleanup(func() { _ = app.Close() })
	require.Error(t, app.Info(ctx, "memory").Err(), "the app user may run INFO")
	require.Error(t, admin.ConfigGet(ctx, "maxmemory").Err(), "CONFIG was not renamed away")
	return admin, app
}

// rejectedCalls reads how many calls of each command the server refused
// (INFO commandstats rejected_calls: ACL refusals among them), by lower-case
// command name ("info", "client|list").
func rejectedCalls(t *testing.T, admin *redis.Client) map[string]int {
	t.Helper()
	info, err := admin.Info(context.Background(), "commandstats").Result()
	require.NoError(t, err)
	out := map[string]int{}
	for line := range strings.SplitSeq(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		for f := range strings.SplitSeq(rest, ",") {
			if v, ok := strings.CutPrefix(f, "rejected_calls="); ok {
				n, _ := strconv.Atoi(v)
				if n > 0 {
					out[strings.TrimPrefix(name, "cmdstat_")] = n
				}
			}
		}
	}
	return out
}

// TestManagedRedisWithoutDangerousCommands: on a managed Redis (CONFIG
// renamed away, an application user without @dangerous: no INFO, CLIENT,
// KEYS, CONFIG) a Queue, a Worker, QueueEvents, a FlowProducer and a job
// scheduler start and work: every job is processed, its events read, a
// cancel reaches the running job. What drover only uses for a warning
// (INFO memory's maxmemory-policy) is tried once per handle, not on every
// add: each refused call is one more round trip and one more error line in
// the server's ACL log, forever.
func TestManagedRedisWithoutDangerousCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	admin, app := managedRedis(t)
	var logs testkit.SyncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))

	q, err := drover.NewQueue(app, "q", &drover.QueueOptions{Logger: log})
	require.NoError(t, err)
	qe, err := drover.NewQueueEvents(app, "q", &drover.QueueEventsOptions{LastEventID: "0", BlockTimeout: 100 * time.Millisecond, Logger: log})
	require.NoError(t, err)
	completed := traffic.CountCompletions(t, qe)

	const adds = 30
	var ids []string
	for i := range adds {
		r, err := q.Add(ctx, "one", map[string]int{"i": i}, nil)
		require.NoError(t, err)
		ids = append(ids, r.Job.ID)
	}
	bulk, err := q.AddBulk(ctx, []drover.BulkJob{{Name: "b1"}, {Name: "b2"}})
	require.NoError(t, err)
	for _, r := range bulk {
		ids = append(ids, r.Job.ID)
	}
	fp, err := drover.NewFlowProducer(app, &drover.FlowProducerOptions{Logger: log})
	require.NoError(t, err)
	node, err := fp.Add(ctx, drover.FlowJob{Name: "parent", QueueName: "q", Children: []drover.FlowJob{{Name: "child", QueueName: "q"}}})
	require.NoError(t, err)
	ids = append(ids, node.Job.ID, node.Children[0].Job.ID)
	_, err = q.UpsertJobScheduler(ctx, "every", drover.RepeatOptions{Every: 200 * time.Millisecond}, &drover.JobTemplate{Name: "tick"})
	require.NoError(t, err)
	long, err := q.Add(ctx, "long", nil, nil)
	require.NoError(t, err)

	var ticks sync.Map
	cancelled := make(chan error, 1)
	w, err := drover.NewWorker(app, "q", drover.ProcessorFunc(func(ctx context.Context, job *drover.Job) (any, error) {
		switch job.Name {
		case "tick":
			ticks.Store(job.ID, true)
		case "long":
			<-ctx.Done()
			cancelled <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		}
		return "ok", nil
	}), &drover.WorkerOptions{Concurrency: 4, Logger: log})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	t.Cleanup(func() { require.NoError(t, w.Close(context.Background())) })

	testkit.WaitFor(t, 20*time.Second, "every job completed", func() bool {
		for _, id := range ids {
			if completed.Of(id) == 0 {
				return false
			}
		}
		return true
	})
	testkit.WaitFor(t, 20*time.Second, "the scheduler's runs", func() bool {
		n := 0
		ticks.Range(func(any, any) bool { n++; return true })
		return n >= 3
	})
	testkit.WaitFor(t, 10*time.Second, "the long job running", func() bool {
		st, err := q.GetJobState(ctx, long.Job.ID)
		return err == nil && st == drover.StateActive
	})
	require.NoError(t, q.CancelJob(ctx, long.Job.ID, "stop it", nil))
	select {
	case err := <-cancelled:
		require.Error(t, err)
	case <-time.After(15 * time.Second):
		t.Fatal("the cancel did not reach the running job")
	}

	// More adds after the start: none may try INFO again.
	for range adds {
		_, err := q.Add(ctx, "more", nil, nil)
		require.NoError(t, err)
	}
	rejected := rejectedCalls(t, admin)
	t.Logf("refused calls: %v", rejected)
	for cmd, n := range rejected {
		// The Queue, the Worker's queue and the flow's queue may each
		// try INFO once; managedRedis tried it once.
		require.LessOrEqualf(t, n, 4, "%s refused %d times: drover retries what the ACL will never allow", cmd, n)
	}
	require.NotContains(t, logs.String(), "level=ERROR", "an error logged for a refused optional command")
}
