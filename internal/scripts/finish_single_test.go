package scripts

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/redistest"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestFinishSingleMatchesBatch holds finishJobs' single-job path (one
// plain completion, finishJobs.lua before its helpers) to the batch path:
// two queues start from the same state, one finishes job 1 with the plain
// record the worker sends (the single path, where it applies), the other
// with the same completion sent with its record's tail (empty timeline,
// no deduplication id, no parent), which only the batch path reads. The
// replies and the Redis states (normalized: stream ids) must be equal, in
// the cases the single path takes and in each it hands to the batch path,
// with the queue's keys declared (a cluster client) and built from the
// base.
func TestFinishSingleMatchesBatch(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	ctx := context.Background()
	now := time.Now().UnixMilli()
	plain := func(id string) FinishRecord {
		return FinishRecord{ID: id, Token: "t:" + id, Kind: FinishCompleted, Value: `{"r":1}`, AttemptsMade: 1, Attempts: 1}
	}
	rig := finishRig{rdb: rdb, now: now}
	add, take, do := rig.add, rig.take, rig.do
	type setup func(t *testing.T, k keys.Queue) (FetchArgs, int, FinishRecord)
	args := func(k keys.Queue) FetchArgs {
		return FetchArgs{Now: now, Count: 1, Token: "t2", LockDuration: 30000, WorkerName: "w"}
	}
	// three jobs, job 1 active: the next one waits.
	three := func(t *testing.T, k keys.Queue) (FetchArgs, int, FinishRecord) {
		add(t, k, AddRecord{}, AddRecord{}, AddRecord{})
		take(t, k, 1)
		return args(k), 0, plain("1")
	}
	with := func(s setup, change func(t *testing.T, k keys.Queue, a *FetchArgs, points *int, r *FinishRecord)) setup {
		return func(t *testing.T, k keys.Queue) (FetchArgs, int, FinishRecord) {
			a, points, r := s(t, k)
			change(t, k, &a, &points, &r)
			return a, points, r
		}
	}
	cases := map[string]setup{
		"next waits": three,
		"next prioritized": func(t *testing.T, k keys.Queue) (FetchArgs, int, FinishRecord) {
			add(t, k, AddRecord{}, AddRecord{Priority: 3}, AddRecord{Priority: 2})
			take(t, k, 1)
			return args(k), 0, plain("1")
		},
		"queue drained": func(t *testing.T, k keys.Queue) (FetchArgs, int, FinishRecord) {
			add(t, k, AddRecord{})
			take(t, k, 1)
			return args(k), 0, plain("1")
		},
		"pre-v5 marker next": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, _ *FinishRecord) {
			add(t, k, AddRecord{Priority: 4})
			do(t, []any{"rpush", k.Wait(), "0:123"})
		}),
		"listed id without a hash": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, _ *FinishRecord) {
			do(t, []any{"rpush", k.Wait(), "77"})
		}),
		"delayed job due": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, _ *FinishRecord) {
			add(t, k, AddRecord{Delay: 100})
		}),
		"remove on complete": with(three, func(t *testing.T, _ keys.Queue, _ *FetchArgs, _ *int, r *FinishRecord) {
			r.Keep = "0"
		}),
		"keep a count": func(t *testing.T, k keys.Queue) (FetchArgs, int, FinishRecord) {
			add(t, k, AddRecord{}, AddRecord{}, AddRecord{})
			take(t, k, 2)
			errs, _, err := FinishJobs(ctx, rdb, k, FetchArgs{Now: now - 200, Token: "t1", LockDuration: 30000}, 0, []FinishRecord{plain("2")})
			require.NoError(t, err)
			require.NoError(t, errs[0])
			r := plain("1")
			r.Keep = "1,,0"
			return args(k), 0, r
		},
		"keep an age": with(three, func(t *testing.T, _ keys.Queue, _ *FetchArgs, _ *int, r *FinishRecord) {
			r.Keep = "-1,0,0"
		}),
		"metrics": with(three, func(t *testing.T, _ keys.Queue, _ *FetchArgs, points *int, _ *FinishRecord) {
			*points = 10
		}),
		"paused": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, _ *FinishRecord) {
			do(t, []any{"hset", k.Meta(), "paused", "1"})
		}),
		"global concurrency": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, _ *FinishRecord) {
			do(t, []any{"hset", k.Meta(), "concurrency", "2"})
		}),
		"queue rate limit": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, _ *FinishRecord) {
			do(t, []any{"hset", k.Meta(), "max", "5", "duration", limitWindow})
		}),
		"worker rate limit": with(three, func(t *testing.T, _ keys.Queue, a *FetchArgs, _ *int, _ *FinishRecord) {
			a.LimitMax, a.LimitWindow = 5, limitWindow
		}),
		"no events cap in meta": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, _ *FinishRecord) {
			do(t, []any{"del", k.Meta()})
		}),
		"events cap in meta": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, _ *FinishRecord) {
			do(t, []any{"hset", k.Meta(), "opts.maxLenEvents", "5"})
		}),
		"manual fetch-next lock": with(three, func(t *testing.T, _ keys.Queue, a *FetchArgs, _ *int, _ *FinishRecord) {
			a.ExactLock = "mine"
		}),
		"no worker name": with(three, func(t *testing.T, _ keys.Queue, a *FetchArgs, _ *int, _ *FinishRecord) {
			a.WorkerName = ""
		}),
		"fetch none": with(three, func(t *testing.T, _ keys.Queue, a *FetchArgs, _ *int, _ *FinishRecord) {
			a.Count = 0
		}),
		"next attempt counted": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, _ *FinishRecord) {
			do(t, []any{"hset", k.Job("2"), "ats", "3"})
		}),
		"next attempts not a number": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, _ *FinishRecord) {
			do(t, []any{"hset", k.Job("2"), "ats", "abc"})
		}),
		"still stalled": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, _ *FinishRecord) {
			do(t, []any{"sadd", k.Stalled(), "1"})
		}),
		"lock taken": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, _ *FinishRecord) {
			do(t, []any{"set", k.Lock("1"), "other"})
		}),
		"lock missing": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, _ *FinishRecord) {
			do(t, []any{"del", k.Lock("1")})
		}),
		"job missing": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, _ *FinishRecord) {
			do(t, []any{"del", k.Lock("1"), k.Job("1")})
		}),
		"not active": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, _ *FinishRecord) {
			do(t, []any{"lrem", k.Active(), "0", "1"})
		}),
		"child pending": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, _ *FinishRecord) {
			do(t, []any{"sadd", k.Dependencies("1"), k.Job("9")})
		}),
		"child failed": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, _ *FinishRecord) {
			do(t, []any{"zadd", k.Unsuccessful("1"), "1", k.Job("9")})
		}),
		"may be adopted, was not": with(three, func(t *testing.T, _ keys.Queue, _ *FetchArgs, _ *int, r *FinishRecord) {
			r.MayBeAdopted = true
		}),
		"adopted by a flow": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, r *FinishRecord) {
			r.MayBeAdopted = true
			do(t, []any{"hset", k.Job("p"), "name", "p", "data", "{}", "opts", "{}", "timestamp", "1", "delay", "0", "priority", "0"},
				[]any{"zadd", k.WaitingChildren(), "1", "p"},
				[]any{"sadd", k.Dependencies("p"), k.Job("1")},
				[]any{"hset", k.Job("1"), "parentKey", k.Job("p"), "parent", `{"id":"p","queueKey":"` + strings.TrimSuffix(k.Base(), ":") + `"}`})
		}),
		"settled call": with(three, func(t *testing.T, k keys.Queue, _ *FetchArgs, _ *int, _ *FinishRecord) {
			do(t, []any{"set", k.Base() + "call:t2", "1"})
		}),
	}
	i := 0
	for name, s := range cases {
		for _, declared := range []bool{true, false} {
			i++
			ka := keys.New(fmt.Sprintf("%s-a%d", prefix, i), "q")
			kb := keys.New(fmt.Sprintf("%s-b%d", prefix, i), "q")
			sub := name
			if !declared {
				// The keys built from the base (a client off a cluster).
				ka, kb, sub = ka.Standalone(), kb.Standalone(), name+" standalone"
			}
			t.Run(sub, func(t *testing.T) {
				t.Parallel()
				a, pointsA, recA := s(t, ka)
				b, pointsB, recB := s(t, kb)
				gotA := rdb.Do(ctx, finishCall(ka, a, pointsA, recA, false)...)
				gotB := rdb.Do(ctx, finishCall(kb, b, pointsB, recB, true)...)
				replyA := strings.ReplaceAll(fmt.Sprint(gotA.Val(), gotA.Err()), ka.Prefix(), "<prefix>")
				replyB := strings.ReplaceAll(fmt.Sprint(gotB.Val(), gotB.Err()), kb.Prefix(), "<prefix>")
				require.Equal(t, replyB, replyA, "replies")
				require.Empty(t, stateDiff(t, ctx, rdb, ka.Prefix(), kb.Prefix()), "single path (a) against the batch path (b)")
				t.Logf("reply %s", replyA)
			})
		}
	}
}

// finishCall is the EVAL of FinishJobs(k, a, points, {r}); withTail sends
// the record's tail even where FinishJobs would not (more = "1").
func finishCall(k keys.Queue, a FetchArgs, points int, r FinishRecord, withTail bool) []any {
	cmd := []any{"eval", finishJobs.ready().src}
	cmd = append(cmd, k.ScriptArgs()...)
	cmd = append(cmd, a.Now, a.Count, a.Token, a.LockDuration, a.WorkerName, a.LimitMax, a.LimitWindow, a.promoteMax(), 1, points, a.ExactLock)
	fields := finishRecord
	if !withTail && !r.hasTail() {
		fields = fields[:finishHead]
	}
	for _, f := range fields {
		v := f.arg(&r)
		if f.name == "more" && withTail {
			v = "1"
		}
		cmd = append(cmd, v)
	}
	return cmd
}

// stateDiff is statedump.Diff of the normalized states under prefixes a and b.
func stateDiff(t *testing.T, ctx context.Context, rdb redis.UniversalClient, a, b string) []string {
	t.Helper()
	sa, err := statedump.Dump(ctx, rdb, a)
	require.NoError(t, err)
	sb, err := statedump.Dump(ctx, rdb, b)
	require.NoError(t, err)
	na, err := statedump.Normalize(sa, nil)
	require.NoError(t, err)
	nb, err := statedump.Normalize(sb, nil)
	require.NoError(t, err)
	return statedump.Diff(na, nb)
}
