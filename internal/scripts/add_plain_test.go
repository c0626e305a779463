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
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// TestAddPlainMatchesAddJobs holds addPlainJobs (AddJobs' way for a batch
// of plain records) to addJobs, which takes every option: two queues start
// from the same state, one gets the batch through addPlainJobs, the other
// the same records through addJobs. The replies (the raw one and AddJobs'
// outcomes) and the whole Redis states must be equal, stream entry ids
// aside (timestamps, JSON and the once key's expiry are compared as
// written), in states that change what an add writes (pause, global
// concurrency, the events cap, the id counter), for batches of 1 to 5001
// records (the wait list is pushed 5,000 ids a command), with the queue's
// keys declared and built from the base, with and without a call token,
// and when the call is sent again (the first run's reply, nothing written).
func TestAddPlainMatchesAddJobs(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	ctx := context.Background()
	now := time.Now().UnixMilli()
	do := func(t *testing.T, cmds ...[]any) {
		t.Helper()
		for _, c := range cmds {
			require.NoError(t, rdb.Do(ctx, c...).Err(), "%v", c)
		}
	}
	// earlier adds n jobs, some with options, through AddJobs.
	earlier := func(t *testing.T, k keys.Queue, n int) {
		t.Helper()
		recs := make([]AddRecord, n)
		for i := range recs {
			recs[i] = AddRecord{Name: "e", Timestamp: now - 5000, Data: "{}", Opts: "{}"}
		}
		if n > 1 {
			recs[1].Priority = 2
		}
		_, err := AddJobs(ctx, rdb, k, Call{}, recs)
		require.NoError(t, err)
	}
	cases := map[string]func(t *testing.T, k keys.Queue){
		"new queue":    func(*testing.T, keys.Queue) {},
		"jobs there":   func(t *testing.T, k keys.Queue) { earlier(t, k, 4) },
		"paused":       func(t *testing.T, k keys.Queue) { do(t, []any{"hset", k.Meta(), "paused", "1"}) },
		"marker there": func(t *testing.T, k keys.Queue) { do(t, []any{"zadd", k.Marker(), "0", "0"}) },
		"delayed marker": func(t *testing.T, k keys.Queue) {
			do(t, []any{"zadd", k.Marker(), strconv.FormatInt(now+9000, 10), "1"})
		},
		"no events cap": func(t *testing.T, k keys.Queue) { do(t, []any{"hset", k.Meta(), "version", "x"}) },
		"events cap in meta": func(t *testing.T, k keys.Queue) {
			do(t, []any{"hset", k.Meta(), "opts.maxLenEvents", "5"})
		},
		"events over their cap": func(t *testing.T, k keys.Queue) {
			for i := 0; i < 250; i++ {
				do(t, []any{"xadd", k.Events(), "*", "event", "x"})
			}
			do(t, []any{"hset", k.Meta(), "opts.maxLenEvents", "5"})
		},
		"global concurrency used up": func(t *testing.T, k keys.Queue) {
			earlier(t, k, 2)
			// The marker taken, as by the worker that took the job.
			do(t, []any{"hset", k.Meta(), "concurrency", "1"}, []any{"lmove", k.Wait(), k.Active(), "right", "left"},
				[]any{"del", k.Marker()})
		},
		"global concurrency free": func(t *testing.T, k keys.Queue) {
			earlier(t, k, 2)
			do(t, []any{"hset", k.Meta(), "concurrency", "3"}, []any{"lmove", k.Wait(), k.Active(), "right", "left"},
				[]any{"del", k.Marker()})
		},
		"id counter far on": func(t *testing.T, k keys.Queue) { do(t, []any{"set", k.ID(), "123456789012"}) },
		// The reply kept for a resend keeps every digit (Lua's tostring
		// keeps 14; the ids written are Lua's, on both paths).
		"id counter past 14 digits": func(t *testing.T, k keys.Queue) { do(t, []any{"set", k.ID(), "123456789012345"}) },
		"a stale hash at the next id": func(t *testing.T, k keys.Queue) {
			do(t, []any{"hset", k.Job("1"), "name", "old", "returnvalue", "7", "delay", "5"})
		},
	}
	// records are n plain records, each with its own name, time and data.
	records := func(n int) []AddRecord {
		recs := make([]AddRecord, n)
		for i := range recs {
			s := strconv.Itoa(i)
			recs[i] = AddRecord{Name: "job" + s, Timestamp: now + int64(i), Data: `{"i":` + s + `,"s":"é\u0000\n"}`,
				Opts: `{"attempts":` + s + `,"removeOnComplete":true}`, DedupTTL: int64(i), DedupFlags: "r"[:i%2]}
		}
		if n > 2 {
			recs[2].Name, recs[2].Data, recs[2].Opts = "", "", ""
		}
		return recs
	}
	opts := &statedump.NormalizeOptions{KeepTimestamps: true, KeepJSON: true, KeepUUIDs: true, KeepMetaVersion: true}
	dump := func(t *testing.T, p string) *statedump.Snapshot {
		t.Helper()
		s, err := statedump.Dump(ctx, rdb, p)
		require.NoError(t, err)
		s, err = statedump.Normalize(s, opts)
		require.NoError(t, err)
		return s
	}
	// fieldOrder is every job hash of k as HGETALL lists it (statedump
	// compares hashes as maps): the field order BullMQ's readers see.
	fieldOrder := func(t *testing.T, k keys.Queue) map[string]string {
		t.Helper()
		hashes := map[string]string{}
		iter := rdb.Scan(ctx, 0, k.Base()+"*", 1000).Iterator()
		for iter.Next(ctx) {
			key := iter.Val()
			if rdb.Type(ctx, key).Val() != "hash" {
				continue
			}
			v, err := rdb.Eval(ctx, "return redis.call('HGETALL', KEYS[1])", []string{key}).Result()
			require.NoError(t, err)
			hashes[strings.TrimPrefix(key, k.Prefix())] = fmt.Sprint(v)
		}
		require.NoError(t, iter.Err())
		return hashes
	}
	same := func(t *testing.T, ka, kb keys.Queue, what string) {
		t.Helper()
		require.Empty(t, statedump.Diff(dump(t, ka.Prefix()), dump(t, kb.Prefix())), "addPlainJobs (a) against addJobs (b), %s", what)
		require.Equal(t, fieldOrder(t, kb), fieldOrder(t, ka), "hash field order, %s", what)
	}
	i := 0
	for name, setup := range cases {
		sizes := []int{1, 2, 5, 9}
		if name == "new queue" {
			sizes = append(sizes, 5001)
		}
		for _, n := range sizes {
			for _, declared := range []bool{true, false} {
				for _, token := range []bool{true, false} {
					i++
					ka := keys.New(fmt.Sprintf("%s-a%d", prefix, i), "q")
					kb := keys.New(fmt.Sprintf("%s-b%d", prefix, i), "q")
					sub := fmt.Sprintf("%s/%d", name, n)
					if !declared {
						ka, kb, sub = ka.Standalone(), kb.Standalone(), sub+" standalone"
					}
					call := Call{}
					if token {
						call, sub = NewCall(time.Minute), sub+" token"
					}
					t.Run(sub, func(t *testing.T) {
						t.Parallel()
						setup(t, ka)
						setup(t, kb)
						recs := records(n)
						require.True(t, allPlain(recs))
						for send := 1; send <= 2; send++ {
							gotA := rdb.Do(ctx, plainCall(ka, call, recs)...)
							gotB := rdb.Do(ctx, generalCall(kb, call, recs)...)
							require.NoError(t, gotA.Err())
							require.Equal(t, fmt.Sprint(gotB.Val()), fmt.Sprint(gotA.Val()), "replies, send %d", send)
							same(t, ka, kb, fmt.Sprintf("send %d", send))
							if !token {
								break // a second send adds the jobs again
							}
						}
						// The Go wrappers' outcomes, one more batch each.
						outA, err := AddJobs(ctx, rdb, ka, Call{}, recs)
						require.NoError(t, err)
						outB, err := addGeneral(ctx, rdb, kb, Call{}, recs)
						require.NoError(t, err)
						require.Equal(t, outB, outA, "outcomes")
						same(t, ka, kb, "after AddJobs and addGeneral")
					})
				}
			}
		}
	}
}

// plainCall is the EVAL AddJobs sends for plain recs (addPlainJobs);
// generalCall the EVAL of addJobs for the same records.
func plainCall(k keys.Queue, call Call, recs []AddRecord) []any {
	cmd := addPlainJobs.cmdArgs(k, 2+plainFields*len(recs))
	cmd[0], cmd[1] = "eval", addPlainJobs.ready().src
	cmd = append(cmd, call.Token, call.ttlMs())
	for i := range recs {
		cmd = append(cmd, recs[i].Name, recs[i].Timestamp, recs[i].Data, recs[i].Opts)
	}
	return cmd
}

func generalCall(k keys.Queue, call Call, recs []AddRecord) []any {
	cmd := addJobs.cmdArgs(k, 0)
	cmd[0], cmd[1] = "eval", addJobs.ready().src
	return appendAddArgs(cmd, call, recs)
}

// TestAddJobsTakesThePlainWayForPlainBatchesOnly: a record with any option
// addPlainJobs does not write (a custom id, a delay, a priority, lifo, a
// deduplication id; a negative delay or priority, which addJobs writes as
// given) is not plain, and a batch with one such record among plain ones
// leaves Redis as addJobs leaves it. A dedup ttl or flags without a dedup
// id change nothing addJobs writes, so such a record is plain.
func TestAddJobsTakesThePlainWayForPlainBatchesOnly(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	ctx := context.Background()
	plain := AddRecord{Name: "p", Timestamp: 1, Data: "{}", Opts: "{}", DedupTTL: 5, DedupFlags: "re"}
	require.True(t, plain.plain())
	for _, tt := range []struct {
		name string
		rec  AddRecord
	}{
		{"custom id", AddRecord{ID: "x"}},
		{"delay", AddRecord{Delay: 5}},
		{"negative delay", AddRecord{Delay: -5}},
		{"priority", AddRecord{Priority: 1}},
		{"negative priority", AddRecord{Priority: -1}},
		{"lifo", AddRecord{LIFO: true}},
		{"deduplication id", AddRecord{DedupID: "d"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := tt.rec
			rec.Name, rec.Timestamp, rec.Data, rec.Opts = "o", 1, "{}", "{}"
			require.False(t, rec.plain())
			recs := []AddRecord{plain, rec, plain}
			name := strings.ReplaceAll(tt.name, " ", "-")
			ka := keys.New(prefix+"-a-"+name, "q").Standalone()
			kb := keys.New(prefix+"-b-"+name, "q").Standalone()
			outA, err := AddJobs(ctx, rdb, ka, Call{}, recs)
			require.NoError(t, err)
			outB, err := addGeneral(ctx, rdb, kb, Call{}, recs)
			require.NoError(t, err)
			require.Equal(t, outB, outA)
			require.Empty(t, stateDiff(t, ctx, rdb, ka.Prefix(), kb.Prefix()))
		})
	}
}
