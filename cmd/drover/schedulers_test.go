package main

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

func TestSchedulerCommands(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	run := func(args ...string) (string, error) { return runCLI(ctx, t, prefix, args...) }

	out, err := run("scheduler", "upsert", "mail", "digest", "--pattern", "0 7 * * *", "--tz", "Europe/Paris", "--data", `{"k":1}`, "--limit", "3")
	require.NoError(t, err, out)
	require.Contains(t, out, "job scheduler digest, next run")
	out, err = run("scheduler", "upsert", "mail", "poll", "--every", "1h")
	require.NoError(t, err, out)

	out, err = run("schedulers", "mail")
	require.NoError(t, err, out)
	require.Contains(t, out, "0 7 * * * (Europe/Paris)")
	require.Contains(t, out, "every 1h0m0s")
	require.Contains(t, out, "1/3")

	out, err = run("schedulers", "mail", "--json")
	require.NoError(t, err, out)
	var got struct {
		Schedulers []struct {
			ID   string `json:"id"`
			Next int64  `json:"next"` // epoch ms, as every instant of --json
		} `json:"schedulers"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	require.Len(t, got.Schedulers, 2)
	require.Equal(t, "poll", got.Schedulers[0].ID, "soonest next run first")
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	s, err := q.GetJobScheduler(ctx, "digest")
	require.NoError(t, err)
	require.Equal(t, s.Next.UnixMilli(), got.Schedulers[1].Next)

	out, err = run("scheduler", "remove", "mail", "digest")
	require.NoError(t, err, out)
	_, err = q.GetJobScheduler(ctx, "digest")
	require.ErrorIs(t, err, drover.ErrJobSchedulerNotFound)
	_, err = run("scheduler", "remove", "mail", "digest")
	require.Error(t, err)
	_, err = run("scheduler", "upsert", "mail", "bad", "--pattern", "61 * * * *")
	require.Error(t, err)

	// --tz defaults to UTC, as its help says: the zone is stored, so no
	// worker computes the runs in its own machine's local time.
	out, err = run("scheduler", "upsert", "mail", "nightly", "--pattern", "0 3 * * *")
	require.NoError(t, err, out)
	s, err = q.GetJobScheduler(ctx, "nightly")
	require.NoError(t, err)
	require.Equal(t, "UTC", s.TZ, "the zone a pattern without --tz is stored with")
	require.Equal(t, 3, s.Next.UTC().Hour(), "next run at 03:00 UTC")

	// Usage errors name the flags and write nothing.
	keys, err := rdb.Keys(ctx, prefix+"*").Result()
	require.NoError(t, err)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"scheduler", "upsert", "other", "s"}, "exactly one of --every and --pattern"},
		{[]string{"scheduler", "upsert", "other", "s", "--every", "1h", "--pattern", "* * * * *"}, "exactly one of --every and --pattern"},
		{[]string{"scheduler", "upsert", "other", "s", "--every", "1h", "--data", "{"}, "--data must be JSON"},
	} {
		out, err := run(tc.args...)
		require.ErrorContains(t, err, tc.want, out)
	}
	after, err := rdb.Keys(ctx, prefix+"*").Result()
	require.NoError(t, err)
	require.ElementsMatch(t, keys, after, "usage errors write nothing")
}

// TestSchedulersListSaysNextRunAndNone: `drover schedulers` printed a
// queue without schedulers as a bare header, and each next run in UTC
// RFC 3339 alone ("2026-12-07T04:56:46Z"), so a run long overdue (no
// worker on the queue to make it) looked like any other, and in another
// format and zone than drover jobs and job use. It now says there are
// none, and shows local time with how far off the run is. Its JSON twin:
// `scheduler upsert --json` gave next as an RFC 3339 string where every
// other --json instant is epoch ms.
func TestSchedulersListSaysNextRunAndNone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	rdb, prefix := redistest.Client(t)
	run := func(args ...string) (string, error) { return runCLI(ctx, t, prefix, args...) }
	q, err := drover.NewQueue(rdb, "mail", &drover.QueueOptions{Prefix: prefix})
	require.NoError(t, err)
	_, err = q.Add(ctx, "x", nil, nil)
	require.NoError(t, err)
	out, err := run("schedulers", "mail")
	require.NoError(t, err, out)
	require.Equal(t, "no job schedulers in mail\n", out)

	// upsert --json gives next in epoch ms, as drover schedulers --json
	// does (it was an RFC 3339 string there alone).
	out, err = run("scheduler", "upsert", "mail", "poll", "--every", "1h", "--json")
	require.NoError(t, err, out)
	var upserted struct {
		Next any `json:"next"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &upserted))
	s, err := q.GetJobScheduler(ctx, "poll")
	require.NoError(t, err)
	require.Equal(t, float64(s.Next.UnixMilli()), upserted.Next)
	// The run is overdue, as when no worker took the scheduler's job.
	past := s.Next.Add(-3 * time.Hour)
	require.NoError(t, rdb.ZAdd(ctx, prefix+":mail:repeat", redis.Z{Score: float64(past.UnixMilli()), Member: "poll"}).Err())
	out, err = run("schedulers", "mail")
	require.NoError(t, err, out)
	require.Regexp(t, `(?m)^poll\s+poll\s+every 1h0m0s\s+`+regexp.QuoteMeta(past.Local().Format("2006-01-02 15:04:05"))+` \([23]h\d+m\d+s ago\)\s+1$`, out)
}
