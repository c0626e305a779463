package interoptest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit"
	"github.com/seed40057009/drover/internal/testkit/statedump"
)

// schedulerKind is one kind of job scheduler, spelled for both sides.
type schedulerKind struct {
	name   string
	node   map[string]any
	drover drover.RepeatOptions
}

var schedulerKinds = []schedulerKind{
	{"Every", map[string]any{"every": 1000}, drover.RepeatOptions{Every: time.Second}},
	// The first cron run is made due at once (immediately): otherwise it is
	// delayed or, when the upsert straddles the second it computed, already
	// waiting, which depends on timing rather than on the format.
	{"Cron", map[string]any{"pattern": "* * * * * *", "tz": "Europe/Paris", "limit": 50, "immediately": true},
		drover.RepeatOptions{Pattern: "* * * * * *", TZ: "Europe/Paris", Limit: 50, Immediately: true}},
}

// upsertScheduler creates scheduler "s1" with the given implementation: runs
// named "tick" with data {"a":1} and two attempts.
func (b *bundle) upsertScheduler(t *testing.T, by impl, kind schedulerKind) {
	t.Helper()
	ctx := context.Background()
	if by == nodeImpl {
		_, err := b.oracle.UpsertJobScheduler(ctx, b.prefix, queueName, "s1", kind.node,
			map[string]any{"name": "tick", "data": map[string]any{"a": 1}, "opts": map[string]any{"attempts": 2}})
		require.NoError(t, err)
		return
	}
	_, err := b.dq.UpsertJobScheduler(ctx, "s1", kind.drover, &drover.JobTemplate{
		Name: "tick", Data: map[string]any{"a": 1}, Opts: &drover.JobOptions{Attempts: 2},
	})
	require.NoError(t, err)
}

// completedCount is the size of the completed set.
func (b *bundle) completedCount(t *testing.T) int64 {
	t.Helper()
	n, err := b.rdb.ZCard(context.Background(), b.prefix+":"+queueName+":completed").Result()
	require.NoError(t, err)
	return n
}

var runIDRE = regexp.MustCompile(`repeat:s1:(\d{13})`)

// rankRuns renames scheduler runs by rank ("repeat:s1:#0", "#1", ...)
// instead of their due millisecond, which differs between any two runs of a
// scenario, and replaces the values that depend on when the test ran: the
// scheduler's offset within its interval and the runs' relative delays.
func rankRuns(raw *statedump.Snapshot) {
	seen := map[string]bool{}
	collect := func(s string) {
		for _, m := range runIDRE.FindAllStringSubmatch(s, -1) {
			seen[m[1]] = true
		}
	}
	for name, k := range raw.Keys {
		collect(name)
		for _, v := range k.Hash {
			collect(v)
		}
		for _, z := range k.ZSet {
			collect(z.Member)
		}
		for _, e := range k.Stream {
			for _, f := range e.Fields {
				collect(f)
			}
		}
		for _, v := range k.List {
			collect(v)
		}
	}
	ms := make([]string, 0, len(seen))
	for m := range seen {
		ms = append(ms, m)
	}
	sort.Strings(ms)
	rank := make(map[string]string, len(ms))
	for i, m := range ms {
		rank[m] = "#" + strconv.Itoa(i)
	}
	rename := func(s string) string {
		return runIDRE.ReplaceAllStringFunc(s, func(id string) string { return "repeat:s1:" + rank[id[len("repeat:s1:"):]] })
	}
	keys := make(map[string]*statedump.Key, len(raw.Keys))
	for name, k := range raw.Keys {
		for f, v := range k.Hash {
			k.Hash[f] = rename(v)
		}
		for i := range k.ZSet {
			k.ZSet[i].Member = rename(k.ZSet[i].Member)
		}
		for i := range k.List {
			k.List[i] = rename(k.List[i])
		}
		for i := range k.Stream {
			for j := range k.Stream[i].Fields {
				k.Stream[i].Fields[j] = rename(k.Stream[i].Fields[j])
			}
		}
		if strings.HasSuffix(name, ":repeat:s1") && k.Hash["every"] != "" {
			k.Hash["offset"] = "<offset>"
		}
		if d := k.Hash["delay"]; d != "" && d != "0" {
			k.Hash["delay"] = "<delay>"
		}
		if o := k.Hash["opts"]; o != "" && strings.HasPrefix(rename(name), queueName+":repeat:s1:#") {
			var m map[string]any
			if json.Unmarshal([]byte(o), &m) == nil {
				if d, ok := m["delay"].(float64); ok && d != 0 {
					m["delay"] = "<delay>"
				}
				b, _ := json.Marshal(m)
				k.Hash["opts"] = string(b)
			}
		}
		// Stream entries of "delayed" carry the due time: a timestamp.
		keys[rename(name)] = k
	}
	raw.Keys = keys
}

// runScheduler creates scheduler s1 with upsertBy, lets a worker of workBy
// take `runs` runs and returns the comparable state.
func runScheduler(t *testing.T, b *bundle, kind schedulerKind, upsertBy, workBy impl, runs int64) *statedump.Snapshot {
	t.Helper()
	b.upsertScheduler(t, upsertBy, kind)
	stop := b.startWorker(t, workBy, workerSpec{})
	testkit.WaitFor(t, waitLong, fmt.Sprintf("%d runs completed", runs), func() bool { return b.completedCount(t) >= runs })
	stop()
	require.Equal(t, runs, b.completedCount(t), "the worker stopped before the next run was due")
	return comparableDump(t, b.rdb, b.prefix, dumpOptions{workersRan: true, rewrite: rankRuns})
}

// TestInteropJobScheduler runs a job scheduler made by one side with the
// workers of either side and requires the same Redis state as Node BullMQ
// alone: the runs (ids repeat:s1:<ms>, fields, opts with count, prevMillis,
// repeatJobKey), the repeat zset and scheduler hash (iteration count), the
// next delayed run and the events.
func TestInteropJobScheduler(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	const runs = 3

	for _, kind := range schedulerKinds {
		t.Run(kind.name, func(t *testing.T) {
			t.Parallel()

			t.Run("NodeSchedulerDroverWorker", func(t *testing.T) {
				t.Parallel()
				node := setup(t)
				drv := node.sibling(t)
				want := runScheduler(t, node, kind, nodeImpl, nodeImpl, runs)
				got := runScheduler(t, drv, kind, nodeImpl, droverImpl, runs)
				requireSameState(t, want, got)
			})

			t.Run("DroverSchedulerNodeWorker", func(t *testing.T) {
				t.Parallel()
				node := setup(t)
				drv := node.sibling(t)
				want := runScheduler(t, node, kind, nodeImpl, nodeImpl, runs)
				got := runScheduler(t, drv, kind, droverImpl, nodeImpl, runs)
				requireSameState(t, want, got)
			})

			t.Run("DroverOnly", func(t *testing.T) {
				t.Parallel()
				node := setup(t)
				drv := node.sibling(t)
				want := runScheduler(t, node, kind, nodeImpl, nodeImpl, runs)
				got := runScheduler(t, drv, kind, droverImpl, droverImpl, runs)
				requireSameState(t, want, got)
			})
		})
	}
}

// TestInteropJobSchedulerAPI: a scheduler written by one side reads the
// same through the other side's getters, and removal by either side
// deletes it with its delayed run.
func TestInteropJobSchedulerAPI(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()
	start := time.Now().Add(time.Hour).Truncate(time.Second)
	end := start.Add(48 * time.Hour)

	for _, by := range []impl{nodeImpl, droverImpl} {
		t.Run("UpsertBy"+strings.ToUpper(string(by[:1]))+string(by[1:]), func(t *testing.T) {
			t.Parallel()
			b := setup(t)
			if by == nodeImpl {
				_, err := b.oracle.UpsertJobScheduler(ctx, b.prefix, queueName, "daily",
					map[string]any{"pattern": "30 2 * * *", "tz": "America/New_York", "startDate": start.UnixMilli(), "endDate": end.UnixMilli(), "limit": 5},
					map[string]any{"name": "report", "data": map[string]any{"kind": "daily"}, "opts": map[string]any{"priority": 3}})
				require.NoError(t, err)
				_, err = b.oracle.UpsertJobScheduler(ctx, b.prefix, queueName, "fast", map[string]any{"every": 60000, "offset": 500}, nil)
				require.NoError(t, err)
			} else {
				_, err := b.dq.UpsertJobScheduler(ctx, "daily", drover.RepeatOptions{
					Pattern: "30 2 * * *", TZ: "America/New_York", StartDate: start, EndDate: end, Limit: 5,
				}, &drover.JobTemplate{Name: "report", Data: map[string]any{"kind": "daily"}, Opts: &drover.JobOptions{Priority: 3}})
				require.NoError(t, err)
				_, err = b.dq.UpsertJobScheduler(ctx, "fast", drover.RepeatOptions{Every: time.Minute, Offset: 500 * time.Millisecond}, nil)
				require.NoError(t, err)
			}

			n, err := b.oracle.GetJobSchedulersCount(ctx, b.prefix, queueName)
			require.NoError(t, err)
			require.EqualValues(t, 2, n)
			dn, err := b.dq.GetJobSchedulersCount(ctx)
			require.NoError(t, err)
			require.EqualValues(t, 2, dn)

			ns, err := b.oracle.GetJobScheduler(ctx, b.prefix, queueName, "daily")
			require.NoError(t, err)
			require.NotNil(t, ns)
			ds, err := b.dq.GetJobScheduler(ctx, "daily")
			require.NoError(t, err)
			require.Equal(t, ns.Name, ds.Name)
			require.Equal(t, "report", ds.Name)
			require.Equal(t, ns.Next, ds.Next.UnixMilli())
			require.Equal(t, ns.Pattern, ds.Pattern)
			require.Equal(t, ns.TZ, ds.TZ)
			require.Equal(t, ns.Limit, int64(ds.Limit))
			require.Equal(t, ns.StartDate, ds.StartDate.UnixMilli())
			require.Equal(t, ns.EndDate, ds.EndDate.UnixMilli())
			require.Equal(t, ns.IterationCount, int64(ds.Iterations))
			require.JSONEq(t, string(ns.Template.Data), string(ds.Data))
			require.EqualValues(t, 3, ns.Template.Opts["priority"])
			// The first run is 02:30 New York time on a day after startDate.
			next := time.UnixMilli(ns.Next).In(ds.Next.Location())
			ny, err := time.LoadLocation("America/New_York")
			require.NoError(t, err)
			require.Equal(t, "02:30", next.In(ny).Format("15:04"))
			require.True(t, next.After(start))

			fast, err := b.dq.GetJobScheduler(ctx, "fast")
			require.NoError(t, err)
			require.Equal(t, time.Minute, fast.Every)
			require.Equal(t, 500*time.Millisecond, fast.Offset)
			require.EqualValues(t, 500, fast.Next.UnixMilli()%60000, "runs are aligned to the offset")
			nfast, err := b.oracle.GetJobScheduler(ctx, b.prefix, queueName, "fast")
			require.NoError(t, err)
			require.Equal(t, nfast.Next, fast.Next.UnixMilli())
			require.EqualValues(t, 500, nfast.Offset)

			nl, err := b.oracle.GetJobSchedulers(ctx, b.prefix, queueName, 0, -1, true)
			require.NoError(t, err)
			dl, err := b.dq.GetJobSchedulers(ctx, 0, -1, true)
			require.NoError(t, err)
			require.Len(t, dl, len(nl))
			for i := range nl {
				require.Equal(t, nl[i].Key, dl[i].ID)
			}
			page, err := b.dq.GetJobSchedulers(ctx, 0, 0, false)
			require.NoError(t, err)
			require.Len(t, page, 1)
			require.Equal(t, nl[len(nl)-1].Key, page[0].ID, "descending: the latest next run first")

			// The delayed run is the one the scheduler points at.
			runID := fmt.Sprintf("repeat:daily:%d", ns.Next)
			state, err := b.dq.GetJobState(ctx, runID)
			require.NoError(t, err)
			require.Equal(t, drover.StateDelayed, state)

			// Remove with the other side: scheduler and delayed run gone.
			if by == nodeImpl {
				ok, err := b.dq.RemoveJobScheduler(ctx, "daily")
				require.NoError(t, err)
				require.True(t, ok)
			} else {
				ok, err := b.oracle.RemoveJobScheduler(ctx, b.prefix, queueName, "daily")
				require.NoError(t, err)
				require.True(t, ok)
			}
			_, err = b.dq.GetJobScheduler(ctx, "daily")
			require.ErrorIs(t, err, drover.ErrJobSchedulerNotFound)
			gone, err := b.oracle.GetJobScheduler(ctx, b.prefix, queueName, "daily")
			require.NoError(t, err)
			require.Nil(t, gone)
			_, err = b.dq.GetJob(ctx, runID)
			require.ErrorIs(t, err, drover.ErrJobNotFound)
			ok, err := b.dq.RemoveJobScheduler(ctx, "daily")
			require.NoError(t, err)
			require.False(t, ok, "removing again reports a missing scheduler")
		})
	}
}

// TestInteropJobSchedulerUpsertState: the Redis state right after an
// upsert, and after a second upsert that changes the scheduler while its
// run is delayed, is the same whichever side wrote it.
func TestInteropJobSchedulerUpsertState(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	ctx := context.Background()

	type step struct {
		node   map[string]any
		drover drover.RepeatOptions
		tmpl   map[string]any
		dtmpl  *drover.JobTemplate
	}
	start := time.Now().Add(2 * time.Hour).Truncate(time.Hour)
	tests := []struct {
		name  string
		steps []step
	}{
		{"CronReplacedWhileDelayed", []step{
			{map[string]any{"pattern": "0 3 * * *", "tz": "Europe/Paris"}, drover.RepeatOptions{Pattern: "0 3 * * *", TZ: "Europe/Paris"},
				map[string]any{"name": "n1", "data": map[string]any{"v": 1}}, &drover.JobTemplate{Name: "n1", Data: map[string]any{"v": 1}}},
			{map[string]any{"pattern": "0 4 * * *", "tz": "Europe/Paris"}, drover.RepeatOptions{Pattern: "0 4 * * *", TZ: "Europe/Paris"},
				map[string]any{"name": "n2", "data": map[string]any{"v": 2}, "opts": map[string]any{"attempts": 3, "removeOnComplete": true}},
				&drover.JobTemplate{Name: "n2", Data: map[string]any{"v": 2}, Opts: &drover.JobOptions{Attempts: 3, RemoveOnComplete: &drover.Retention{Remove: true}}}},
		}},
		{"EveryStartDateReplaced", []step{
			{map[string]any{"every": 3600000, "startDate": start.UnixMilli()}, drover.RepeatOptions{Every: time.Hour, StartDate: start}, nil, nil},
			{map[string]any{"every": 3600000, "startDate": start.UnixMilli()}, drover.RepeatOptions{Every: time.Hour, StartDate: start},
				map[string]any{"data": map[string]any{"v": 2}}, &drover.JobTemplate{Data: map[string]any{"v": 2}}},
			{map[string]any{"every": 7200000, "startDate": start.UnixMilli()}, drover.RepeatOptions{Every: 2 * time.Hour, StartDate: start}, nil, nil},
		}},
		{"CronLimitEndDate", []step{
			{map[string]any{"pattern": "15 */6 * * *", "limit": 4, "endDate": start.Add(72 * time.Hour).UnixMilli()},
				drover.RepeatOptions{Pattern: "15 */6 * * *", Limit: 4, EndDate: start.Add(72 * time.Hour)},
				map[string]any{"name": "x", "opts": map[string]any{"priority": 7, "backoff": map[string]any{"type": "fixed", "delay": 100}, "attempts": 2}},
				&drover.JobTemplate{Name: "x", Opts: &drover.JobOptions{Priority: 7, Attempts: 2, Backoff: &drover.Backoff{Type: drover.BackoffFixed, Delay: 100 * time.Millisecond}}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			node := setup(t)
			drv := node.sibling(t)
			for _, s := range tt.steps {
				_, err := node.oracle.UpsertJobScheduler(ctx, node.prefix, queueName, "s1", s.node, s.tmpl)
				require.NoError(t, err)
				_, err = drv.dq.UpsertJobScheduler(ctx, "s1", s.drover, s.dtmpl)
				require.NoError(t, err)
			}
			want := comparableDump(t, node.rdb, node.prefix, dumpOptions{rewrite: rankRuns})
			got := comparableDump(t, drv.rdb, drv.prefix, dumpOptions{rewrite: rankRuns})
			requireSameState(t, want, got)
		})
	}
}

// TestInteropCronNext compares drover's next-run computation with the
// cron-parser BullMQ uses, live, around the daylight-saving changes of New
// York and Paris and on ordinary days.
func TestInteropCronNext(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	b := setup(t)
	ctx := context.Background()
	patterns := []string{"30 2 * * *", "30 1 * * *", "0 * * * *", "*/20 * * * *", "0 2 * * *", "15 2,3 * * *",
		"0 1-3 * * *", "*/30 1-2 * * *", "0 0 * * 1-5", "0 30 2 * * *", "45 2 * * 0", "*/10 2 * * *", "0 12 1 * *", "0 9 * * MON",
		// cron-parser's day rules: 7 is Sunday (in ranges and steps too),
		// L, nL and n#k, and either day field matches when both are set.
		"0 0 * * 7", "30 2 * * 5-7", "0 0 * * 1/2", "0 0 L * *", "30 2 * * 0L", "0 9 * * 1#2", "0 0 * * 0#5",
		"0 0 L 2 *", "0 0 1,15 * 1", "0 0 L * 5", "@weekdays", "@weekends", "@minutely"}
	froms := map[string][]string{
		"America/New_York": {"2026-03-07T12:00:00Z", "2026-03-08T06:10:00Z", "2026-10-31T12:00:00Z", "2026-11-01T05:40:00Z", "2026-11-01T06:10:00Z", "2027-03-13T12:00:00Z"},
		"Europe/Paris":     {"2026-03-28T12:00:00Z", "2026-03-29T00:50:00Z", "2026-10-24T12:00:00Z", "2026-10-25T00:40:00Z", "2026-10-25T01:10:00Z", "2027-03-27T12:00:00Z"},
		"":                 {"2026-06-15T10:11:12.345Z"},
	}
	var zones []string
	for z := range froms {
		zones = append(zones, z)
	}
	slices.Sort(zones)
	for _, tz := range zones {
		for _, from := range froms[tz] {
			f, err := time.Parse(time.RFC3339Nano, from)
			require.NoError(t, err)
			for _, p := range patterns {
				want, err := b.oracle.CronNext(ctx, p, tz, f.UnixMilli(), 5)
				require.NoError(t, err)
				got := droverCronNext(t, p, tz, f, 5)
				require.Equal(t, want, got, "%q in %q from %s", p, tz, from)
			}
		}
	}
}

// droverCronNext is the next n runs drover.NextRun gives, each after the
// previous one, as a worker creating run after run computes them.
func droverCronNext(t *testing.T, pattern, tz string, from time.Time, n int) []int64 {
	t.Helper()
	out := make([]int64, 0, n)
	cur := from
	for range n {
		next, err := drover.NextRun(pattern, tz, cur)
		require.NoError(t, err)
		out = append(out, next.UnixMilli())
		cur = next
	}
	return out
}

// TestInteropJobSchedulerDedupTemplate: a Node scheduler whose template
// has a deduplication id gives every run the run's "deid" field (BullMQ
// stores it as for any add; drover's own templates refuse deduplication).
// The runs a drover worker creates carry it too, so the state equals Node
// BullMQ alone and Node reads the run's deduplicationId. Before, the runs
// a drover worker made had no deid (field deid only in a).
func TestInteropJobSchedulerDedupTemplate(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	node := newSetup(t)(t)
	drv := node.sibling(t)
	const runs = 2
	run := func(b *bundle, by impl) *statedump.Snapshot {
		_, err := b.oracle.UpsertJobScheduler(ctx, b.prefix, queueName, "s1", map[string]any{"every": 1000},
			map[string]any{"name": "tick", "opts": map[string]any{"deduplication": map[string]any{"id": "d1"}}})
		require.NoError(t, err)
		stop := b.startWorker(t, by, workerSpec{})
		testkit.WaitFor(t, waitLong, fmt.Sprintf("%d runs completed", runs), func() bool { return b.completedCount(t) >= runs })
		stop()
		require.EqualValues(t, runs, b.completedCount(t), "the worker stopped before the next run was due")
		return comparableDump(t, b.rdb, b.prefix, dumpOptions{workersRan: true, rewrite: rankRuns})
	}
	want := run(node, nodeImpl)
	got := run(drv, droverImpl)
	requireSameState(t, want, got)

	// The run waiting now was made by the drover worker.
	ids, err := drv.dq.GetJobIDs(ctx, []drover.JobState{drover.StateDelayed, drover.StateWaiting}, 0, -1, false)
	require.NoError(t, err)
	require.Len(t, ids, 1)
	nj, err := drv.oracle.GetJob(ctx, drv.prefix, queueName, ids[0])
	require.NoError(t, err)
	require.Equal(t, "d1", nj.DeduplicationID, "Node's deduplicationId of the run a drover worker made")
}

// TestInteropJobSchedulerCronDayRules: a Node scheduler whose pattern uses
// cron-parser's day rules (7 for Sunday, L, nL, n#k, @weekdays) goes on
// when a drover worker takes its run: the worker makes the next run Node's
// worker would make. Before, drover's cron parser refused these patterns
// ("failed to parse int from L", "end of range (7) above maximum (6)"),
// so the drover worker made no next run and the scheduler stopped.
func TestInteropJobSchedulerCronDayRules(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	for _, pattern := range []string{"0 0 L * *", "30 2 * * 5L", "0 9 * * 1#2", "0 0 * * 7", "0 0 * * 2/5", "@weekdays"} {
		t.Run(strings.NewReplacer(" ", "_", "*", "x", "/", "s", "#", "n", "@", "").Replace(pattern), func(t *testing.T) {
			t.Parallel()
			kind := schedulerKind{name: pattern, node: map[string]any{"pattern": pattern, "tz": "Europe/Paris", "immediately": true}}
			node := setup(t)
			drv := node.sibling(t)
			want := runScheduler(t, node, kind, nodeImpl, nodeImpl, 1)
			got := runScheduler(t, drv, kind, nodeImpl, droverImpl, 1)
			requireSameState(t, want, got)
		})
	}
}

// TestInteropJobSchedulerHashedPattern: a Node scheduler whose pattern uses
// cron-parser's hashed values (H, drawn anew each time the pattern is
// parsed) keeps running under a drover worker: the worker that takes a run
// makes the next one. Before, drover refused H, the next run was never
// made and the scheduler stopped.
func TestInteropJobSchedulerHashedPattern(t *testing.T) {
	t.Parallel()
	setup := newSetup(t)
	for _, pattern := range []string{"H H * * *", "0 H/15 * * * *", "H(0-5) 3 * * THU"} {
		t.Run(strings.NewReplacer(" ", "_", "*", "x", "/", "s", "(", "", ")", "").Replace(pattern), func(t *testing.T) {
			t.Parallel()
			kind := schedulerKind{name: pattern, node: map[string]any{"pattern": pattern, "immediately": true}}
			b := setup(t)
			runScheduler(t, b, kind, nodeImpl, droverImpl, 1)
			ctx := context.Background()
			next, err := b.rdb.ZRangeWithScores(ctx, b.prefix+":"+queueName+":repeat", 0, -1).Result()
			require.NoError(t, err)
			require.Len(t, next, 1)
			require.Greater(t, int64(next[0].Score), time.Now().UnixMilli(), "the scheduler's next run is ahead")
			delayed, err := b.rdb.ZCard(ctx, b.prefix+":"+queueName+":delayed").Result()
			require.NoError(t, err)
			require.Equal(t, int64(1), delayed, "the next run waits in delayed")
		})
	}
}
