package dashboard_test

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/dashboard"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// countingConn counts the bytes read from Redis.
type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.n.Add(int64(n))
	return n, err
}

// TestListsReadTheStartOfLongFailures: a page of failed jobs and the
// failure groups read from Redis only what they show. Each job failed
// twice with a 512 KB message, so its hash holds it five times (the
// failed reason, two stack traces, two attempts of the timeline): the
// list and the groups read all of it, 2.6 MB a job (0.4 to 3 s per
// answer for 25 such jobs). They now read the start of the reason and of
// the last trace and the last attempt's outcome, cut in Redis: a few KB a
// job. The job page still reads and shows the whole reason.
func TestListsReadTheStartOfLongFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	direct, prefix := redistest.Client(t)
	var read atomic.Int64
	rdb := redis.NewClient(&redis.Options{Addr: redistest.Shared(t).Addr, ReadTimeout: 15 * time.Second,
		Dialer: func(ctx context.Context, network, addr string) (net.Conn, error) {
			c, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return countingConn{Conn: c, n: &read}, nil
		}})
	t.Cleanup(func() { _ = rdb.Close() })
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix, DiscoveryInterval: -1})
	require.NoError(t, err)
	t.Cleanup(func() { _ = ins.Close(ctx) })
	h, err := dashboard.New(ins, &dashboard.Options{AnonymousRole: dashboard.RoleAdmin})
	require.NoError(t, err)
	t.Cleanup(func() { _ = h.Close(ctx) })
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)

	const jobs, size = 10, 512 << 10
	huge := "upstream answered 500: " + strings.Repeat("é", size/2)
	q, err := drover.NewQueue(direct, "big", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	var ids []string
	for range jobs {
		res, err := q.Add(ctx, "call", nil, &drover.JobOptions{Attempts: 2, Backoff: &drover.Backoff{Type: "fixed", Delay: time.Millisecond}})
		require.NoError(t, err)
		ids = append(ids, res.Job.ID)
	}
	w, err := drover.NewWorker(direct, "big", drover.ProcessorFunc(func(context.Context, *drover.Job) (any, error) { return nil, errors.New(huge) }),
		&drover.WorkerOptions{Prefix: prefix, Concurrency: 4, DrainDelay: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	require.NoError(t, err)
	require.NoError(t, w.Start(ctx))
	waitCount(t, q, drover.StateFailed, jobs)
	require.NoError(t, w.Close(ctx))
	var stored int64
	for _, f := range []string{"failedReason", "stacktrace", "drover.attempts"} {
		n, err := direct.HStrLen(ctx, prefix+":big:"+ids[0], f).Result()
		require.NoError(t, err)
		stored += n
	}
	require.Greater(t, stored, int64(5*size), "each job holds the message five times")

	c := &client{t: t, base: srv.URL + "/", headers: map[string]string{}, hc: &http.Client{Timeout: 30 * time.Second}}
	readFor := func(path string, out any) int64 {
		t.Helper()
		before := read.Load()
		require.Equal(t, http.StatusOK, c.get(path, out), string(c.lastBody))
		t.Logf("%s read %d bytes from Redis", path, read.Load()-before)
		return read.Load() - before
	}
	var page struct {
		Jobs []struct {
			ID, FailedReason, FailedFor string
		}
	}
	n := readFor("api/queues/big/jobs?state=failed&limit=25", &page)
	require.Len(t, page.Jobs, jobs)
	require.Less(t, n, int64(jobs*(inspect.SummaryReasonMax+4<<10)), "the list read %d bytes for %d jobs", n, jobs)
	for _, j := range page.Jobs {
		require.Equal(t, "attempts-exhausted", j.FailedFor, j.ID)
		require.True(t, strings.HasPrefix(j.FailedReason, "upstream answered 500: ééé"), j.ID)
		require.True(t, strings.HasSuffix(j.FailedReason, "…"), j.ID)
	}
	var groups struct {
		Scanned int
		Groups  []struct {
			Count         int
			Unrecoverable int
			Error         string
		}
	}
	n = readFor("api/queues/big/failures", &groups)
	require.Less(t, n, int64(jobs*(inspect.SummaryReasonMax+4<<10)), "the failure groups read %d bytes for %d jobs", n, jobs)
	require.Len(t, groups.Groups, 1)
	require.Equal(t, jobs, groups.Groups[0].Count)
	require.Zero(t, groups.Groups[0].Unrecoverable)

	// A filter on the reason reads the whole reason (the text may be at its
	// end), not the traces.
	n = readFor("api/queues/big/jobs?state=failed&limit=25&reason=%C3%A9%C3%A9", &page)
	require.Len(t, page.Jobs, jobs)
	require.Less(t, n, int64(jobs*(size+inspect.SummaryReasonMax)), "the filtered list read %d bytes for %d jobs", n, jobs)

	var d struct{ FailedReason string }
	require.Equal(t, http.StatusOK, c.get("api/queues/big/jobs/"+ids[0], &d))
	require.Equal(t, huge, d.FailedReason, "the job page has the whole reason")
}

// waitCount waits until q holds n jobs in state.
func waitCount(t *testing.T, q *drover.Queue, state drover.JobState, n int64) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		counts, err := q.GetJobCounts(context.Background(), state)
		require.NoError(t, err)
		if counts[state] == n {
			return
		}
		require.True(t, time.Now().Before(deadline), "%d jobs %s, want %d", counts[state], state, n)
		time.Sleep(50 * time.Millisecond)
	}
}
