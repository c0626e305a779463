package scripts

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover/internal/keys"
	"github.com/seed40057009/drover/internal/testkit/redistest"
)

// TestFinishTakesJobsOutOfActiveAsLREM holds the way finishJobs takes a
// batch's jobs out of the active list (an LREM per job under 8 jobs, the
// list read once and written back from 8) to BullMQ's rule: each job
// leaves at its entry nearest the tail (LREM active -1 id), and a record
// whose job has no entry is refused (not active). The active list is laid
// out in each case below, every listed job locked by the call's records;
// the batch is finished both the straight way (plain records) and the
// batch path's (the same records with their tails, and with a failure
// among them). The list left and which records were done must be what the
// rule gives. (Not covered: an id listed twice in active, or two records
// of one job in a call; there the rewrite from 8 jobs takes the entry
// nearest the head.)
func TestFinishTakesJobsOutOfActiveAsLREM(t *testing.T) {
	t.Parallel()
	rdb, prefix := redistest.Client(t)
	ctx := context.Background()
	now := time.Now().UnixMilli()
	rig := finishRig{rdb: rdb, now: now}
	ids := func(from, to int) []string {
		var out []string
		for i := from; i <= to; i++ {
			out = append(out, strconv.Itoa(i))
		}
		if from > to {
			for i := from; i >= to; i-- {
				out = append(out, strconv.Itoa(i))
			}
		}
		return out
	}
	cat := slices.Concat[[]string]
	// The batch is jobs 1..n (records in that order unless a case says
	// otherwise); jobs n+1..n+4 are the other active jobs. A list is
	// written head first: the fetch pushes at the head, so jobs taken in
	// the order 1..n lie n..1 from the head, job 1 at the tail.
	type layout struct {
		list func(n int) []string
		recs func(n int) []string
	}
	in := func(n int) []string { return ids(1, n) }
	others := func(n int) []string { return ids(n+1, n+4) }
	cases := map[string]layout{
		"the batch is the tail, taken in its order": {list: func(n int) []string { return cat(others(n), ids(n, 1)) }},
		"the batch is the tail, another order":      {list: func(n int) []string { return cat(others(n), ids(1, n)) }},
		"the batch alone":                           {list: func(n int) []string { return ids(n, 1) }},
		"the batch at the head":                     {list: func(n int) []string { return cat(ids(n, 1), others(n)) }},
		"another job among the batch": {list: func(n int) []string {
			return cat(others(n)[:2], ids(n, n/2+1), others(n)[2:3], ids(n/2, 1), others(n)[3:])
		}},
		"the tail's last entry another job's": {list: func(n int) []string { return cat(others(n)[:3], ids(n, 1), others(n)[3:]) }},
		"the batch's oldest deeper": {list: func(n int) []string {
			return cat(others(n)[:1], []string{"1"}, others(n)[1:], ids(n, 2))
		}},
		"a job not active": {list: func(n int) []string {
			return slices.DeleteFunc(cat(others(n), ids(n, 1)), func(s string) bool { return s == strconv.Itoa((n+1)/2) })
		}},
		"fewer entries than jobs": {list: func(n int) []string { return cat(others(n), []string{"2", "1"}) }},
		"no entry left":           {list: func(int) []string { return nil }},
		"records in another order": {
			list: func(n int) []string { return cat(others(n), ids(n, 1)) },
			recs: func(n int) []string { return cat(ids(2, n), []string{"1"}) },
		},
	}
	type variant struct {
		name     string
		withTail bool
		fail     bool
	}
	i := 0
	for name, c := range cases {
		for _, n := range []int{2, 3, 5, 8, 12} {
			for _, v := range []variant{{"straight", false, false}, {"batch path", true, false}, {"a failure among them", false, true}} {
				i++
				k := keys.New(fmt.Sprintf("%s-%d", prefix, i), "q").Standalone()
				t.Run(fmt.Sprintf("%s/%d/%s", name, n, v.name), func(t *testing.T) {
					t.Parallel()
					rig.add(t, k, make([]AddRecord, n+4)...)
					rig.take(t, k, n+4)
					list := c.list(n)
					rig.do(t, []any{"del", k.Active()})
					if len(list) > 0 {
						rig.do(t, append([]any{"rpush", k.Active()}, toAny(list)...))
					}
					recIDs := in(n)
					if c.recs != nil {
						recIDs = c.recs(n)
					}
					recs := make([]FinishRecord, len(recIDs))
					for r, id := range recIDs {
						recs[r] = FinishRecord{ID: id, Token: "t:" + id, Kind: FinishCompleted, Value: "null", AttemptsMade: 1, Attempts: 1}
					}
					if v.fail {
						recs[len(recs)-1].Kind, recs[len(recs)-1].Value = FinishFailed, "boom"
					}
					// The rule, record by record.
					want := slices.Clone(list)
					wantDone := make([]bool, len(recs))
					for r, id := range recIDs {
						for at := len(want) - 1; at >= 0; at-- {
							if want[at] == id {
								want = slices.Delete(want, at, at+1)
								wantDone[r] = true
								break
							}
						}
					}
					a := FetchArgs{Now: now, Count: 0, Token: "t2", LockDuration: 30000, WorkerName: "w"}
					res, err := rdb.Do(ctx, finishCallRecs(k, a, 0, recs, v.withTail)...).Slice()
					require.NoError(t, err)
					done := make([]bool, len(recs))
					if all, ok := res[0].(int64); ok {
						require.EqualValues(t, len(recs), all)
						for r := range done {
							done[r] = true
						}
					} else {
						for r, code := range res[0].([]any) {
							done[r] = code.(int64) == 0
							if !done[r] {
								require.ErrorIs(t, CodeError(code.(int64)), ErrNotInState, "record %d", r)
							}
						}
					}
					got, err := rdb.LRange(ctx, k.Active(), 0, -1).Result()
					require.NoError(t, err)
					require.Equal(t, nilIfEmpty(want), nilIfEmpty(got), "active list (head first), from %v", list)
					require.Equal(t, wantDone, done, "records done")
				})
			}
		}
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
