package inspect_test

import (
	"context"
	"strconv"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/inspect"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

func netOutput(t *testing.T, rdb *redis.Client) int64 {
	t.Helper()
	info, err := rdb.Info(context.Background(), "stats").Result()
	require.NoError(t, err)
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "total_net_output_bytes:"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			require.NoError(t, err)
			return n
		}
	}
	t.Fatal("no total_net_output_bytes")
	return 0
}

// TestBigJobsQueuePage is issue 15 item 13: the queue page reads only the
// fields it shows, not every live job's data; the job page finds a
// waiting job's state without scanning the wait list.
func TestBigJobsQueuePage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv, err := redistest.Start() // its own server: its byte counters are ours
	require.NoError(t, err)
	t.Cleanup(srv.Stop)
	rdb := srv.Client(t)
	const prefix = "big"
	q, err := drover.NewQueue(rdb, "q", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	data := map[string]string{"blob": strings.Repeat("x", 10<<10)}
	var ids []string
	for range 4 {
		jobs := make([]drover.BulkJob, 500)
		for n := range jobs {
			jobs[n] = drover.BulkJob{Name: "big", Data: data, Opts: &drover.JobOptions{Attempts: 3}}
		}
		res, err := q.AddBulk(ctx, jobs)
		require.NoError(t, err)
		for _, r := range res {
			ids = append(ids, r.Job.ID)
		}
	}
	ins, err := inspect.New(rdb, &inspect.Options{Prefix: prefix})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, ins.Close(ctx)) })

	// The budget view (the queue page) scans the 2,000 waiting jobs.
	before := netOutput(t, rdb)
	rep, err := ins.NearExhausted(ctx, "q")
	require.NoError(t, err)
	require.Equal(t, 2000, rep.Scanned)
	read := netOutput(t, rdb) - before
	t.Logf("budget view over 2,000 jobs of 10 KiB: %d KiB out of Redis", read>>10)
	require.Less(t, read, int64(2<<20), "20 MiB of job data stays in Redis")

	page, err := ins.Jobs(ctx, "q", &inspect.ListOptions{State: drover.StateWaiting, Limit: 50})
	require.NoError(t, err)
	require.Len(t, page.Jobs, 50)
	require.Equal(t, 3, page.Jobs[0].Budget.Allowed)

	// The job page: LPOS runs only over the active list (one per state
	// read; the job page reads the state twice), never over the 2,000-job
	// wait list.
	lpos := func() int64 { return cmdCalls(t, rdb, "lpos") }
	before = lpos()
	d, err := ins.Job(ctx, "q", ids[1000])
	require.NoError(t, err)
	require.Equal(t, drover.StateWaiting, d.State)
	require.LessOrEqual(t, lpos()-before, int64(2), "LPOS calls for one job page")
	require.NoError(t, q.Pause(ctx))
	d, err = ins.Job(ctx, "q", ids[1000])
	require.NoError(t, err)
	require.Equal(t, drover.StateWaiting, d.State, "paused jobs are waiting, as BullMQ says")
	_, err = ins.Job(ctx, "q", "nosuch")
	require.ErrorIs(t, err, drover.ErrJobNotFound)
}

// cmdCalls reads how many times the server ran cmd, from scripts too.
func cmdCalls(t *testing.T, rdb *redis.Client, cmd string) int64 {
	t.Helper()
	return int64(redistest.CommandCalls(t, rdb)[cmd])
}
