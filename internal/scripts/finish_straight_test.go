package scripts

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestFinishStraightBatchMatchesBatch holds finishJobs' straight path for
// a batch of plain completions (finishJobs.lua, before its helpers)
// to the batch path, as TestFinishSingleMatchesBatch does for one job:
// two queues start from the same state, one finishes jobs 1..n with the
// plain records the worker sends, the other with the same completions sent
// with their tails, which only the batch path reads. The replies and the
// normalized Redis states must be equal, in the cases the straight path
// takes and in each it hands to the batch path (before it wrote, or after
// it found a job gone from active; batches under 8 take their jobs out of
// active with LREM, bigger ones rewrite the list), with the queue's keys declared
// and built from the base.
func TestFinishStraightBatchMatchesBatch(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	ctx := context.Background()
	now := time.Now().UnixMilli()
	plain := func(id string) FinishRecord {
		return FinishRecord{ID: id, Token: "t:" + id, Kind: FinishCompleted, Value: `{"r":` + id + `}`, AttemptsMade: 1, Attempts: 1}
	}
	rig := finishRig{rdb: rdb, now: now}
	add, take, do := rig.add, rig.take, rig.do
	type state struct {
		a      FetchArgs
		points int
		recs   []FinishRecord
	}
	type setup func(t *testing.T, k keys.Queue, n int) state
	// finish is the call finishing jobs 1..n and fetching n.
	finish := func(n int) state {
		st := state{a: FetchArgs{Now: now, Count: n, Token: "t2", LockDuration: 30000, WorkerName: "w"}}
		for i := 1; i <= n; i++ {
			st.recs = append(st.recs, plain(strconv.Itoa(i)))
		}
		return st
	}
	// n+3 jobs, jobs 1..n active: the next ones wait.
	base := func(t *testing.T, k keys.Queue, n int) state {
		add(t, k, make([]AddRecord, n+3)...)
		take(t, k, n)
		return finish(n)
	}
	with := func(change func(t *testing.T, k keys.Queue, n int, st *state)) setup {
		return func(t *testing.T, k keys.Queue, n int) state {
			st := base(t, k, n)
			change(t, k, n, &st)
			return st
		}
	}
	mid := func(n int) string { return strconv.Itoa((n + 1) / 2) }
	cases := map[string]setup{
		"next ones wait":           base,
		"fetch more than finished": with(func(_ *testing.T, _ keys.Queue, n int, st *state) { st.a.Count = n + 2 }),
		"fetch one":                with(func(_ *testing.T, _ keys.Queue, _ int, st *state) { st.a.Count = 1 }),
		"fetch none":               with(func(_ *testing.T, _ keys.Queue, _ int, st *state) { st.a.Count = 0 }),
		"too few waiting, prioritized next": func(t *testing.T, k keys.Queue, n int) state {
			add(t, k, make([]AddRecord, n+1)...)
			take(t, k, n)
			add(t, k, AddRecord{Priority: 3}, AddRecord{Priority: 2})
			return finish(n)
		},
		"queue drained": func(t *testing.T, k keys.Queue, n int) state {
			add(t, k, make([]AddRecord, n)...)
			take(t, k, n)
			return finish(n)
		},
		"pre-v5 marker in wait": with(func(t *testing.T, k keys.Queue, _ int, _ *state) {
			do(t, []any{"rpush", k.Wait(), "0:123"})
		}),
		"listed id without a hash": with(func(t *testing.T, k keys.Queue, _ int, _ *state) {
			do(t, []any{"rpush", k.Wait(), "77"})
		}),
		"only ids without a hash wait": func(t *testing.T, k keys.Queue, n int) state {
			add(t, k, make([]AddRecord, n)...)
			take(t, k, n)
			for i := 0; i < n; i++ {
				do(t, []any{"rpush", k.Wait(), "7" + strconv.Itoa(i)})
			}
			return finish(n)
		},
		"delayed job due": with(func(t *testing.T, k keys.Queue, _ int, _ *state) {
			add(t, k, AddRecord{Delay: 100})
		}),
		"remove on complete": with(func(_ *testing.T, _ keys.Queue, _ int, st *state) {
			for i := range st.recs {
				st.recs[i].Keep = "0"
			}
		}),
		"remove some on complete": with(func(_ *testing.T, _ keys.Queue, _ int, st *state) {
			for i := 0; i < len(st.recs); i += 2 {
				st.recs[i].Keep = "0"
			}
		}),
		"remove the last on complete": with(func(_ *testing.T, _ keys.Queue, n int, st *state) {
			st.recs[n-1].Keep = "0"
		}),
		"keep an age": with(func(_ *testing.T, _ keys.Queue, _ int, st *state) {
			st.recs[0].Keep = "-1,0,0"
		}),
		"keep a count": with(func(_ *testing.T, _ keys.Queue, _ int, st *state) {
			for i := range st.recs {
				st.recs[i].Keep = "1,,0"
			}
		}),
		"keep a count, the last removed": with(func(_ *testing.T, _ keys.Queue, n int, st *state) {
			for i := range st.recs {
				st.recs[i].Keep = "1,,0"
			}
			st.recs[n-1].Keep = "0"
		}),
		"two keep specs": with(func(_ *testing.T, _ keys.Queue, n int, st *state) {
			st.recs[0].Keep = "1,,0"
			st.recs[n-1].Keep = "-1,0,0"
		}),
		"keep a count, metrics": with(func(_ *testing.T, _ keys.Queue, _ int, st *state) {
			for i := range st.recs {
				st.recs[i].Keep = "2,,0"
			}
			st.points = 10
		}),
		"a failure among them": with(func(_ *testing.T, _ keys.Queue, n int, st *state) {
			st.recs[n-1].Kind, st.recs[n-1].Value = FinishFailed, "boom"
		}),
		"metrics":            with(func(_ *testing.T, _ keys.Queue, _ int, st *state) { st.points = 10 }),
		"paused":             with(func(t *testing.T, k keys.Queue, _ int, _ *state) { do(t, []any{"hset", k.Meta(), "paused", "1"}) }),
		"global concurrency": with(func(t *testing.T, k keys.Queue, _ int, _ *state) { do(t, []any{"hset", k.Meta(), "concurrency", "2"}) }),
		"queue rate limit": with(func(t *testing.T, k keys.Queue, _ int, _ *state) {
			do(t, []any{"hset", k.Meta(), "max", "5", "duration", limitWindow})
		}),
		"worker rate limit": with(func(_ *testing.T, _ keys.Queue, _ int, st *state) {
			st.a.LimitMax, st.a.LimitWindow = 5, limitWindow
		}),
		"no events cap in meta": with(func(t *testing.T, k keys.Queue, _ int, _ *state) { do(t, []any{"del", k.Meta()}) }),
		"events cap in meta": with(func(t *testing.T, k keys.Queue, _ int, _ *state) {
			do(t, []any{"hset", k.Meta(), "opts.maxLenEvents", "5"})
		}),
		"events over their cap": with(func(t *testing.T, k keys.Queue, _ int, _ *state) {
			for i := 0; i < 250; i++ {
				do(t, []any{"xadd", k.Events(), "*", "event", "x"})
			}
			do(t, []any{"hset", k.Meta(), "opts.maxLenEvents", "5"})
		}),
		"no worker name": with(func(_ *testing.T, _ keys.Queue, _ int, st *state) { st.a.WorkerName = "" }),
		"next attempt counted": with(func(t *testing.T, k keys.Queue, n int, _ *state) {
			do(t, []any{"hset", k.Job(strconv.Itoa(n + 1)), "ats", "3"})
		}),
		"still stalled": with(func(t *testing.T, k keys.Queue, n int, _ *state) { do(t, []any{"sadd", k.Stalled(), "1", mid(n)}) }),
		"a lock taken": with(func(t *testing.T, k keys.Queue, n int, _ *state) {
			do(t, []any{"set", k.Lock(mid(n)), "other"})
		}),
		"a lock missing": with(func(t *testing.T, k keys.Queue, n int, _ *state) { do(t, []any{"del", k.Lock(mid(n))}) }),
		"a job missing": with(func(t *testing.T, k keys.Queue, n int, _ *state) {
			do(t, []any{"del", k.Lock(mid(n)), k.Job(mid(n))})
		}),
		"first not active": with(func(t *testing.T, k keys.Queue, _ int, _ *state) { do(t, []any{"lrem", k.Active(), "0", "1"}) }),
		"one in the middle not active": with(func(t *testing.T, k keys.Queue, n int, _ *state) {
			do(t, []any{"lrem", k.Active(), "0", mid(n)})
		}),
		"last not active": with(func(t *testing.T, k keys.Queue, n int, _ *state) {
			do(t, []any{"lrem", k.Active(), "0", strconv.Itoa(n)})
		}),
		"a child pending": with(func(t *testing.T, k keys.Queue, n int, _ *state) {
			do(t, []any{"sadd", k.Dependencies(mid(n)), k.Job("99")})
		}),
		"a child failed": with(func(t *testing.T, k keys.Queue, n int, _ *state) {
			do(t, []any{"zadd", k.Unsuccessful(mid(n)), "1", k.Job("99")})
		}),
		"may be adopted, were not": with(func(_ *testing.T, _ keys.Queue, _ int, st *state) {
			for i := range st.recs {
				st.recs[i].MayBeAdopted = true
			}
		}),
		"one adopted by a flow": with(func(t *testing.T, k keys.Queue, n int, st *state) {
			for i := range st.recs {
				st.recs[i].MayBeAdopted = true
			}
			id := mid(n)
			do(t, []any{"hset", k.Job("p"), "name", "p", "data", "{}", "opts", "{}", "timestamp", "1", "delay", "0", "priority", "0"},
				[]any{"zadd", k.WaitingChildren(), "1", "p"},
				[]any{"sadd", k.Dependencies("p"), k.Job(id)},
				[]any{"hset", k.Job(id), "parentKey", k.Job("p"), "parent", `{"id":"p","queueKey":"` + strings.TrimSuffix(k.Base(), ":") + `"}`})
		}),
		"many others active": with(func(t *testing.T, k keys.Queue, n int, _ *state) {
			add(t, k, make([]AddRecord, 16*n+1)...)
			take(t, k, 16*n+1)
		}),
		"a job twice": with(func(_ *testing.T, _ keys.Queue, _ int, st *state) {
			st.recs[1] = plain("1")
		}),
		"an id twice in active": with(func(t *testing.T, k keys.Queue, _ int, _ *state) {
			do(t, []any{"rpush", k.Active(), "1"})
		}),
		"settled call": with(func(t *testing.T, k keys.Queue, _ int, _ *state) { do(t, []any{"set", k.Base() + "call:t2", "1"}) }),
	}
	i := 0
	for name, s := range cases {
		for _, n := range []int{2, 5, 7, 8, 12} {
			for _, declared := range []bool{true, false} {
				i++
				ka := keys.New(fmt.Sprintf("%s-a%d", prefix, i), "q")
				kb := keys.New(fmt.Sprintf("%s-b%d", prefix, i), "q")
				sub := fmt.Sprintf("%s/%d", name, n)
				if !declared {
					// The keys built from the base (a client off a cluster).
					ka, kb, sub = ka.Standalone(), kb.Standalone(), sub+" standalone"
				}
				t.Run(sub, func(t *testing.T) {
					t.Parallel()
					a := s(t, ka, n)
					b := s(t, kb, n)
					gotA := rdb.Do(ctx, finishCallRecs(ka, a.a, a.points, a.recs, false)...)
					gotB := rdb.Do(ctx, finishCallRecs(kb, b.a, b.points, b.recs, true)...)
					replyA := strings.ReplaceAll(fmt.Sprint(gotA.Val(), gotA.Err()), ka.Prefix(), "<prefix>")
					replyB := strings.ReplaceAll(fmt.Sprint(gotB.Val(), gotB.Err()), kb.Prefix(), "<prefix>")
					require.Equal(t, replyB, replyA, "replies")
					require.Empty(t, stateDiff(t, ctx, rdb, ka.Prefix(), kb.Prefix()), "straight path (a) against the batch path (b)")
					t.Logf("reply %s", replyA)
				})
			}
		}
	}
}

// finishCallRecs is the EVAL of FinishJobs(k, a, points, recs); withTail
// sends every record's tail even where FinishJobs would not (more = "1").
func finishCallRecs(k keys.Queue, a FetchArgs, points int, recs []FinishRecord, withTail bool) []any {
	cmd := []any{"eval", finishJobs.ready().src}
	cmd = append(cmd, k.ScriptArgs()...)
	cmd = append(cmd, a.Now, a.Count, a.Token, a.LockDuration, a.WorkerName, a.LimitMax, a.LimitWindow, a.promoteMax(), len(recs), points, a.ExactLock)
	for i := range recs {
		r := &recs[i]
		fields := finishRecord
		if !withTail && !r.hasTail() {
			fields = fields[:finishHead]
		}
		for _, f := range fields {
			v := f.arg(r)
			if f.name == "more" && withTail {
				v = "1"
			}
			cmd = append(cmd, v)
		}
	}
	return cmd
}
