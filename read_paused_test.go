package drover_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/faultproxy"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestReadsWhileRedisIsPaused: every read of a Queue and of a Job returns
// when its caller's ctx deadline comes, while Redis does not answer (the
// process stopped: no reset, no error), with an error wrapping
// context.DeadlineExceeded and not ErrOutcomeUnknown (a read changes
// nothing). Before, a read waited out the client's own timeouts and
// retries (about 15 s with go-redis's defaults) whatever ctx said: a
// dashboard or a health endpoint with a 1 s budget hung with it.
func TestReadsWhileRedisIsPaused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := redistest.Pausable(t)
	rdb := srv.Client(t)
	q, err := drover.NewQueue(rdb, "q", nil)
	require.NoError(t, err)
	res, err := q.Add(ctx, "m", map[string]int{"n": 1}, nil)
	require.NoError(t, err)
	job := res.Job
	id := job.ID

	calls := map[string]func(context.Context) error{
		"Queue.GetJob":  func(ctx context.Context) error { _, err := q.GetJob(ctx, id); return err },
		"Queue.GetJobs": func(ctx context.Context) error { _, err := q.GetJobs(ctx, nil, 0, -1, true); return err },
		"Queue.GetJobIDs": func(ctx context.Context) error {
			_, err := q.GetJobIDs(ctx, []drover.JobState{drover.StateWaiting}, 0, -1, true)
			return err
		},
		"Queue.GetJobsByID":  func(ctx context.Context) error { _, err := q.GetJobsByID(ctx, []string{id}); return err },
		"Queue.GetJobCounts": func(ctx context.Context) error { _, err := q.GetJobCounts(ctx); return err },
		"Queue.GetCountsPerPriority": func(ctx context.Context) error {
			_, err := q.GetCountsPerPriority(ctx, 0, 1)
			return err
		},
		"Queue.GetJobState": func(ctx context.Context) error { _, err := q.GetJobState(ctx, id); return err },
		"Queue.IsPaused":    func(ctx context.Context) error { _, err := q.IsPaused(ctx); return err },
		"Queue.IsMaxed":     func(ctx context.Context) error { _, err := q.IsMaxed(ctx); return err },
		"Queue.GetMeta":     func(ctx context.Context) error { _, err := q.GetMeta(ctx); return err },
		"Queue.GetVersion":  func(ctx context.Context) error { _, err := q.GetVersion(ctx); return err },
		"Queue.GetJobLogs":  func(ctx context.Context) error { _, _, err := q.GetJobLogs(ctx, id, 0, -1); return err },
		"Queue.GetJobLogsNewestFirst": func(ctx context.Context) error {
			_, _, err := q.GetJobLogsNewestFirst(ctx, id, 0, 9)
			return err
		},
		"Queue.GetMetrics":         func(ctx context.Context) error { _, err := q.GetMetrics(ctx, "completed", 0, -1); return err },
		"Queue.GetRateLimitTTL":    func(ctx context.Context) error { _, err := q.GetRateLimitTTL(ctx, 0); return err },
		"Queue.GetGlobalRateLimit": func(ctx context.Context) error { _, err := q.GetGlobalRateLimit(ctx); return err },
		"Queue.GetGlobalConcurrency": func(ctx context.Context) error {
			_, _, err := q.GetGlobalConcurrency(ctx)
			return err
		},
		"Queue.GetDeduplicationJobID": func(ctx context.Context) error {
			_, err := q.GetDeduplicationJobID(ctx, "d")
			return err
		},
		"Queue.GetJobScheduler":       func(ctx context.Context) error { _, err := q.GetJobScheduler(ctx, "s"); return err },
		"Queue.GetJobSchedulers":      func(ctx context.Context) error { _, err := q.GetJobSchedulers(ctx, 0, -1, true); return err },
		"Queue.GetJobSchedulersCount": func(ctx context.Context) error { _, err := q.GetJobSchedulersCount(ctx); return err },
		"Queue.GetWorkers":            func(ctx context.Context) error { _, err := q.GetWorkers(ctx); return err },
		"Queue.GetFlow":               func(ctx context.Context) error { _, err := q.GetFlow(ctx, id, nil); return err },
		"Job.GetState":                func(ctx context.Context) error { _, err := job.GetState(ctx); return err },
		"Job.GetChildrenValues":       func(ctx context.Context) error { _, err := job.GetChildrenValues(ctx); return err },
		"Job.GetIgnoredChildrenFailures": func(ctx context.Context) error {
			_, err := job.GetIgnoredChildrenFailures(ctx)
			return err
		},
		"Job.GetDependencies":      func(ctx context.Context) error { _, err := job.GetDependencies(ctx, nil); return err },
		"Job.GetDependenciesCount": func(ctx context.Context) error { _, err := job.GetDependenciesCount(ctx); return err },
		"Job.GetDependenciesPage": func(ctx context.Context) error {
			_, err := job.GetDependencies(ctx, &drover.DependenciesOptions{Processed: &drover.DependencyPage{}})
			return err
		},
	}

	start := time.Now()
	errs := callWhilePaused(t, srv, calls)
	require.NoError(t, srv.Signal(syscall.SIGCONT))
	t.Logf("%d reads returned within %s", len(calls), time.Since(start).Round(time.Millisecond))
	for name, err := range errs {
		require.ErrorIs(t, err, context.DeadlineExceeded, name)
		require.NotErrorIs(t, err, errWriteUnknown, name)
	}
}

// TestAddReturnsOnTimeWhenRegisteringHangs: an add's script answered, and
// the network stops answering as the queue handle then registers its name
// (one SADD per handle, best effort). The add returns by its ctx deadline
// with its job; before, the SADD waited out the client's own timeouts (15 s
// read timeout here) whatever ctx said.
func TestAddReturnsOnTimeWhenRegisteringHangs(t *testing.T) {
	t.Parallel()
	srv := redistest.Shared(t)
	proxy, rdb := faultproxy.StartClient(t, srv.Addr, redis.Options{ReadTimeout: 15 * time.Second, WriteTimeout: 15 * time.Second})
	_, prefix := redistest.Client(t)
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)

	proxy.BlackholeAt("sadd")
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	start := time.Now()
	res, err := q.Add(ctx, "m", nil, nil)
	took := time.Since(start)
	proxy.SetBlackhole(false)
	require.NoError(t, err)
	require.NotEmpty(t, res.Job.ID)
	require.Less(t, took, 5*time.Second, "the add waited for the registration past its deadline")
}
