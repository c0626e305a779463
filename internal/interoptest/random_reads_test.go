package interoptest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/seed40057009/drover"
	"github.com/seed40057009/drover/internal/testkit/bullmqoracle"
	"github.com/seed40057009/drover/internal/testkit/difftest"
)

// schedulerView is a job scheduler as both readers describe it, rendered
// for comparison: times relative to the run's anchor (the two runs share
// it), the template's data and options as canonical JSON.
type schedulerView struct {
	ID, Name, Pattern, TZ    string
	Next, StartDate, EndDate int64 // ms after the anchor; 0: none
	Iterations, Limit        int64
	Every, Offset            int64 // ms
	Data, Opts               string
}

// rel is t (ms since the epoch, 0: none) relative to the anchor.
func (r *programRun) rel(ms int64) int64 {
	if ms == 0 {
		return 0
	}
	return ms - r.anchor
}

func relTime(r *programRun, t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return r.rel(t.UnixMilli())
}

// canonicalJSON re-encodes raw with sorted keys ("" stays "", so does
// JSON that does not parse: the difference shows as it is).
func canonicalJSON(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "unparsed:" + string(raw)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return "unencoded:" + string(raw)
	}
	return string(out)
}

func (r *programRun) nodeSchedulerView(s *bullmqoracle.NodeJobScheduler) schedulerView {
	v := schedulerView{
		ID: s.Key, Name: s.Name, Pattern: s.Pattern, TZ: s.TZ, Next: r.rel(s.Next), StartDate: r.rel(s.StartDate),
		EndDate: r.rel(s.EndDate), Iterations: s.IterationCount, Limit: s.Limit, Every: s.Every, Offset: s.Offset,
	}
	if t := s.Template; t != nil {
		v.Data = canonicalJSON(t.Data)
		if t.Opts != nil {
			raw, err := json.Marshal(t.Opts)
			require.NoError(r.t, err)
			v.Opts = canonicalJSON(raw)
		}
	}
	if v.Data == "" {
		// Node's template has no data when its hash has none (a template
		// of {}, or of null, which upsertJobScheduler stores as {}), and
		// its runs get {}; drover's JobScheduler.Data is {} then.
		v.Data = "{}"
	}
	return v
}

func (r *programRun) droverSchedulerView(s *drover.JobScheduler) schedulerView {
	return schedulerView{
		ID: s.ID, Name: s.Name, Pattern: s.Pattern, TZ: s.TZ, Next: relTime(r, s.Next), StartDate: relTime(r, s.StartDate),
		EndDate: relTime(r, s.EndDate), Iterations: int64(s.Iterations), Limit: int64(s.Limit), Every: s.Every.Milliseconds(),
		Offset: s.Offset.Milliseconds(), Data: canonicalJSON(s.Data), Opts: canonicalJSON([]byte(s.Opts)),
	}
}

// read performs the read ops, whose result is what the reader answered.
func (r *programRun) read(ctx context.Context, s *difftest.Step, node bool) string {
	r.t.Helper()
	o, p := r.o, r.prefixOf(s)
	q, dq, _ := r.target(s)
	switch s.Op {
	case difftest.OpGetScheduler:
		id := s.Scheduler.ID
		if node {
			ns, err := o.GetJobScheduler(ctx, p, q, id)
			if err != nil || ns == nil {
				return r.result("none", err)
			}
			return r.result(fmt.Sprintf("%+v", r.nodeSchedulerView(ns)), nil)
		}
		ds, err := dq.GetJobScheduler(ctx, id)
		if errors.Is(err, drover.ErrJobSchedulerNotFound) {
			err = nil // Node answers undefined
		}
		if err != nil || ds == nil {
			return r.result("none", err)
		}
		return r.result(fmt.Sprintf("%+v", r.droverSchedulerView(ds)), nil)
	case difftest.OpGetSchedulers:
		end := -1
		if s.Limit > 0 {
			end = s.Priority + s.Limit - 1
		}
		var views []schedulerView
		if node {
			ns, err := o.GetJobSchedulers(ctx, p, q, s.Priority, end, !s.LIFO)
			if err != nil {
				return r.result("", err)
			}
			for i := range ns {
				views = append(views, r.nodeSchedulerView(&ns[i]))
			}
		} else {
			ds, err := dq.GetJobSchedulers(ctx, int64(s.Priority), int64(end), !s.LIFO)
			if err != nil {
				return r.result("", err)
			}
			for _, d := range ds {
				views = append(views, r.droverSchedulerView(d))
			}
		}
		return r.result(fmt.Sprintf("%+v", views), nil)
	case difftest.OpGetDedupJobID:
		if node {
			var id *string
			err := o.QueueCall(ctx, p, q, "getDeduplicationJobId", &id, s.DedupID)
			if id == nil {
				return r.result("none", err)
			}
			return r.result(*id, err)
		}
		id, err := dq.GetDeduplicationJobID(ctx, s.DedupID)
		if id == "" {
			id = "none"
		}
		return r.result(id, err)
	case difftest.OpGetRateLimitTTL:
		var ms int64
		var err error
		if node {
			var max *int
			if s.Limit > 0 {
				max = &s.Limit
			}
			ms, err = o.GetRateLimitTTL(ctx, p, q, max)
		} else {
			var d time.Duration
			d, err = dq.GetRateLimitTTL(ctx, s.Limit)
			ms = d.Milliseconds()
		}
		if ms > 0 {
			// A running PTTL, read at a slightly different instant in
			// each run: to the minute, rounded up.
			return r.result(fmt.Sprintf("%dm", (ms+59_999)/60_000), err)
		}
		return r.result(fmt.Sprintf("%dms", ms), err)
	case difftest.OpGetCountsPerPriority:
		prios := []int{0, 1, 2, 3, 4, 5}
		got := map[int]int64{}
		var err error
		if node {
			var nc map[string]int64
			err = o.QueueCall(ctx, p, q, "getCountsPerPriority", &nc, prios)
			for _, pr := range prios {
				if n, ok := nc[fmt.Sprint(pr)]; ok {
					got[pr] = n
				}
			}
		} else {
			got, err = dq.GetCountsPerPriority(ctx, prios...)
		}
		return r.result(fmt.Sprint(got), err)
	case difftest.OpGetLimits:
		if node {
			var maxed bool
			var conc *int
			var rate *struct{ Max, Duration int64 }
			err := o.QueueCall(ctx, p, q, "isMaxed", &maxed)
			if err == nil {
				err = o.QueueCall(ctx, p, q, "getGlobalConcurrency", &conc)
			}
			if err == nil {
				err = o.QueueCall(ctx, p, q, "getGlobalRateLimit", &rate)
			}
			return r.result(limitsView(maxed, conc, rate), err)
		}
		maxed, err := dq.IsMaxed(ctx)
		if err != nil {
			return r.result("", err)
		}
		n, set, err := dq.GetGlobalConcurrency(ctx)
		if err != nil {
			return r.result("", err)
		}
		var conc *int
		if set {
			conc = &n
		}
		rl, err := dq.GetGlobalRateLimit(ctx)
		var rate *struct{ Max, Duration int64 }
		if rl != nil {
			rate = &struct{ Max, Duration int64 }{int64(rl.Max), rl.Duration.Milliseconds()}
		}
		return r.result(limitsView(maxed, conc, rate), err)
	case difftest.OpFlowRead:
		return r.flowRead(ctx, s, node)
	case difftest.OpGetJob:
		_, _, id := r.target(s)
		if node {
			nj, err := o.GetJob(ctx, p, q, id)
			if err != nil || nj == nil {
				return r.result("none", err)
			}
			return r.result(fmt.Sprintf("%+v", r.nodeJobView(nj)), nil)
		}
		dj, err := dq.GetJob(ctx, id)
		if errors.Is(err, drover.ErrJobNotFound) {
			return r.result("none", nil) // Node answers undefined
		}
		if err != nil {
			return r.result("", err)
		}
		return r.result(fmt.Sprintf("%+v", r.droverJobView(dj)), nil)
	case difftest.OpGetLogs, difftest.OpGetCountByTypes, difftest.OpIsPaused, difftest.OpGetFlow, difftest.OpGetMetrics:
		return r.read2(ctx, s, node)
	case difftest.OpGetMeta, difftest.OpGetSchedulersCount, difftest.OpExportMetrics:
		return r.read3(ctx, s, node)
	}
	r.t.Fatalf("read of op %q", s.Op)
	return ""
}

// read2 performs the reads of job logs, counts by type, isPaused, flows
// and metrics.
func (r *programRun) read2(ctx context.Context, s *difftest.Step, node bool) string {
	r.t.Helper()
	o, p := r.o, r.prefixOf(s)
	q, dq, id := r.target(s)
	end := -1
	if s.Limit > 0 {
		end = s.Priority + s.Limit - 1
	}
	switch s.Op {
	case difftest.OpGetLogs:
		var lines []string
		var n int64
		var err error
		if node {
			lines, n, err = o.GetJobLogsRange(ctx, p, q, id, s.Priority, end, !s.LIFO)
		} else if s.LIFO {
			lines, n, err = dq.GetJobLogsNewestFirst(ctx, id, int64(s.Priority), int64(end))
		} else {
			lines, n, err = dq.GetJobLogs(ctx, id, int64(s.Priority), int64(end))
		}
		return r.result(fmt.Sprintf("%q count=%d", lines, n), err)
	case difftest.OpGetCountByTypes:
		var n int64
		if node {
			args := make([]any, len(s.Types))
			for i, t := range s.Types {
				args[i] = t
			}
			err := o.QueueCall(ctx, p, q, "getJobCountByTypes", &n, args...)
			return r.result(strconv.FormatInt(n, 10), err)
		}
		// The sum over the distinct names, as Node's: "wait" and
		// "waiting" both count the wait list.
		names := slices.Compact(slices.Sorted(slices.Values(s.Types)))
		counts, err := dq.GetJobCounts(ctx, droverStates(names)...)
		for _, st := range droverStates(names) {
			n += counts[st]
		}
		return r.result(strconv.FormatInt(n, 10), err)
	case difftest.OpIsPaused:
		var paused bool
		var err error
		if node {
			paused, err = o.IsPaused(ctx, p, q)
		} else {
			paused, err = dq.IsPaused(ctx)
		}
		return r.result(strconv.FormatBool(paused), err)
	case difftest.OpGetFlow:
		if node {
			n, err := o.GetFlow(ctx, p, q, id, s.Priority, s.Limit)
			if err != nil || n == nil {
				return r.result("none", err)
			}
			return r.result(nodeFlowView(n), nil)
		}
		n, err := dq.GetFlow(ctx, id, &drover.GetFlowOptions{Depth: s.Priority, MaxChildren: s.Limit})
		if errors.Is(err, drover.ErrJobNotFound) {
			return r.result("none", nil) // Node answers undefined
		}
		if err != nil {
			return r.result("", err)
		}
		return r.result(droverFlowView(n), nil)
	case difftest.OpGetMetrics:
		if node {
			m, err := o.GetMetrics(ctx, p, q, s.State, s.Priority, end)
			if err != nil {
				return r.result("", err)
			}
			return r.result(r.metricsView(m.Meta.Count, m.Meta.PrevTS != 0, m.Meta.PrevCount, m.Data, m.Count), nil)
		}
		m, err := dq.GetMetrics(ctx, s.State, int64(s.Priority), int64(end))
		if err != nil {
			return r.result("", err)
		}
		return r.result(r.metricsView(m.Count, !m.PrevTS.IsZero(), m.PrevCount, m.Data, m.Points), nil)
	}
	r.t.Fatalf("read of op %q", s.Op)
	return ""
}

// read3 performs the reads of the queue's settings, its job schedulers'
// count and its Prometheus text.
func (r *programRun) read3(ctx context.Context, s *difftest.Step, node bool) string {
	r.t.Helper()
	o, p := r.o, r.prefixOf(s)
	q, dq, _ := r.target(s)
	switch s.Op {
	case difftest.OpGetMeta:
		var m map[string]any
		if node {
			if err := o.QueueCall(ctx, p, q, "getMeta", &m); err != nil {
				return r.result("", err)
			}
		} else {
			dm, err := dq.GetMeta(ctx)
			if err != nil {
				return r.result("", err)
			}
			m = metaAsNode(dm)
		}
		b, err := json.Marshal(m) // map keys sorted
		require.NoError(r.t, err)
		return r.result(string(b), nil)
	case difftest.OpGetSchedulersCount:
		var n int64
		var err error
		if node {
			err = o.QueueCall(ctx, p, q, "getJobSchedulersCount", &n)
		} else {
			n, err = dq.GetJobSchedulersCount(ctx)
		}
		return r.result(strconv.FormatInt(n, 10), err)
	case difftest.OpExportMetrics:
		var labels map[string]string
		if s.LIFO {
			labels = map[string]string{"env": "t\"q"}
		}
		var text string
		var err error
		if node {
			args := []any{}
			if labels != nil {
				args = append(args, labels)
			}
			err = o.QueueCall(ctx, p, q, "exportPrometheusMetrics", &text, args...)
		} else {
			text, err = dq.ExportPrometheusMetrics(ctx, labels)
		}
		return r.result(text, err)
	}
	r.t.Fatalf("read of op %q", s.Op)
	return ""
}

// metricsView renders getMetrics' answer, prevTS as present or not, or,
// once a metrics write of the two runs straddled a minute (metricsSkew),
// its count alone (see difftest.Deliberate).
func (r *programRun) metricsView(count int64, prevTS bool, prevCount int64, data []int64, points int64) string {
	if r.metricsSkew {
		return fmt.Sprintf("count=%d", count)
	}
	return fmt.Sprintf("count=%d prevTS=%v prevCount=%d data=%v points=%d", count, prevTS, prevCount, data, points)
}

// nodeFlowView renders a getFlow tree: each node's queue and id, each
// job's children sorted (their order comes from set scans), a missing
// child as "gone".
func nodeFlowView(n *bullmqoracle.FlowNode) string {
	if n == nil {
		return "gone"
	}
	kids := make([]string, len(n.Children))
	for i, c := range n.Children {
		kids[i] = nodeFlowView(c)
	}
	return flowView(n.Queue, n.ID, kids)
}

func droverFlowView(n *drover.JobNode) string {
	if n == nil || n.Job == nil {
		return "gone"
	}
	kids := make([]string, len(n.Children))
	for i, c := range n.Children {
		kids[i] = droverFlowView(c)
	}
	return flowView(n.Ref.Queue, n.Job.ID, kids)
}

func flowView(queue, id string, kids []string) string {
	slices.Sort(kids)
	if len(kids) == 0 {
		return queue + "/" + id
	}
	return queue + "/" + id + "[" + strings.Join(kids, " ") + "]"
}

func limitsView(maxed bool, conc *int, rate *struct{ Max, Duration int64 }) string {
	c, rl := "none", "none"
	if conc != nil {
		c = fmt.Sprint(*conc)
	}
	if rate != nil {
		rl = fmt.Sprintf("%d per %d ms", rate.Max, rate.Duration)
	}
	return fmt.Sprintf("maxed=%v concurrency=%s rateLimit=%s", maxed, c, rl)
}

// flowRead performs OpFlowRead. Children's keys carry the run's prefix,
// which the two runs do not share: it is rendered as "P".
func (r *programRun) flowRead(ctx context.Context, s *difftest.Step, node bool) string {
	r.t.Helper()
	q, dq, id := r.target(s)
	unprefix := func(k string) string { return strings.Replace(k, r.prefix, "P", 1) }
	values := func(m map[string]json.RawMessage) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = unprefix(k) + "=" + canonicalJSON(m[k])
		}
		return "{" + strings.Join(parts, " ") + "}"
	}
	list := func(xs []string) string {
		out := make([]string, len(xs))
		for i, x := range xs {
			out[i] = unprefix(x)
		}
		slices.Sort(out) // a set's members come in no set order
		return fmt.Sprint(out)
	}
	strs := func(m map[string]string) string {
		raw := make(map[string]json.RawMessage, len(m))
		for k, v := range m {
			b, err := json.Marshal(v)
			require.NoError(r.t, err)
			raw[k] = b
		}
		return values(raw)
	}
	type deps struct {
		Processed   map[string]json.RawMessage
		Unprocessed []string
		Ignored     map[string]string
		Failed      []string
	}
	depsView := func(d deps) string {
		return fmt.Sprintf("processed=%s unprocessed=%s ignored=%s failed=%s",
			values(d.Processed), list(d.Unprocessed), strs(d.Ignored), list(d.Failed))
	}
	// pageView renders the kinds a paged read asked for, in the step's
	// order, each with its next cursor.
	type page struct {
		Processed                                                                       map[string]json.RawMessage
		Unprocessed                                                                     []string
		Ignored                                                                         map[string]string
		Failed                                                                          []string
		NextProcessedCursor, NextUnprocessedCursor, NextIgnoredCursor, NextFailedCursor uint64
	}
	pageView := func(d page) string {
		var parts []string
		for _, k := range s.Types {
			switch k {
			case "processed":
				parts = append(parts, fmt.Sprintf("processed=%s next=%d", values(d.Processed), d.NextProcessedCursor))
			case "unprocessed":
				parts = append(parts, fmt.Sprintf("unprocessed=%s next=%d", list(d.Unprocessed), d.NextUnprocessedCursor))
			case "ignored":
				parts = append(parts, fmt.Sprintf("ignored=%s next=%d", strs(d.Ignored), d.NextIgnoredCursor))
			case "failed":
				parts = append(parts, fmt.Sprintf("failed=%s next=%d", list(d.Failed), d.NextFailedCursor))
			}
		}
		return strings.Join(parts, " ")
	}
	countsView := func(c map[string]int64) string {
		parts := make([]string, len(s.Types))
		for i, k := range s.Types {
			parts[i] = fmt.Sprintf("%s=%d", k, c[k])
		}
		return strings.Join(parts, " ")
	}
	if node {
		var err error
		var got string
		switch s.Read {
		case difftest.ReadDependenciesPage:
			opts := map[string]any{}
			for _, k := range s.Types {
				o := map[string]any{}
				if s.Limit > 0 {
					o["count"] = s.Limit
				}
				if k == "failed" && s.Priority > 0 {
					o["cursor"] = s.Priority
				}
				opts[k] = o
			}
			var d page
			err = r.o.JobRead(ctx, r.prefixOf(s), q, id, "getDependencies", &d, opts)
			got = pageView(d)
		case difftest.ReadDependenciesCountOf:
			opts := map[string]any{}
			for _, k := range s.Types {
				opts[k] = true
			}
			var c map[string]int64
			err = r.o.JobRead(ctx, r.prefixOf(s), q, id, "getDependenciesCount", &c, opts)
			got = countsView(c)
		case difftest.ReadChildrenValues:
			var m map[string]json.RawMessage
			err = r.o.JobRead(ctx, r.prefixOf(s), q, id, string(s.Read), &m)
			got = values(m)
		case difftest.ReadDependencies:
			var d deps
			err = r.o.JobRead(ctx, r.prefixOf(s), q, id, string(s.Read), &d)
			got = depsView(d)
		case difftest.ReadDependenciesCount:
			var c drover.DependencyCounts
			err = r.o.JobRead(ctx, r.prefixOf(s), q, id, string(s.Read), &c)
			got = fmt.Sprintf("%+v", c)
		case difftest.ReadIgnoredChildrenFailures, difftest.ReadFailedChildrenValues:
			var m map[string]string
			err = r.o.JobRead(ctx, r.prefixOf(s), q, id, string(s.Read), &m)
			got = strs(m)
		}
		return r.result(got, err)
	}
	j, err := dq.GetJob(ctx, id)
	if err != nil {
		return r.result("", err)
	}
	switch s.Read {
	case difftest.ReadDependenciesPage:
		var o drover.DependenciesOptions
		for _, k := range s.Types {
			pg := &drover.DependencyPage{Count: s.Limit}
			switch k {
			case "processed":
				o.Processed = pg
			case "unprocessed":
				o.Unprocessed = pg
			case "ignored":
				o.Ignored = pg
			case "failed":
				pg.Cursor = uint64(s.Priority)
				o.Failed = pg
			}
		}
		d, err := j.GetDependencies(ctx, &o)
		if err != nil {
			return r.result("", err)
		}
		return r.result(pageView(page{Processed: d.Processed, Unprocessed: d.Unprocessed, Ignored: d.Ignored, Failed: d.Failed,
			NextProcessedCursor: d.NextProcessedCursor, NextUnprocessedCursor: d.NextUnprocessedCursor,
			NextIgnoredCursor: d.NextIgnoredCursor, NextFailedCursor: d.NextFailedCursor}), nil)
	case difftest.ReadDependenciesCountOf:
		c, err := j.GetDependenciesCount(ctx)
		return r.result(countsView(map[string]int64{"processed": c.Processed, "unprocessed": c.Unprocessed, "ignored": c.Ignored, "failed": c.Failed}), err)
	case difftest.ReadChildrenValues:
		m, err := j.GetChildrenValues(ctx)
		return r.result(values(m), err)
	case difftest.ReadDependencies:
		d, err := j.GetDependencies(ctx, nil)
		if err != nil {
			return r.result("", err)
		}
		return r.result(depsView(deps{Processed: d.Processed, Unprocessed: d.Unprocessed, Ignored: d.Ignored, Failed: d.Failed}), nil)
	case difftest.ReadDependenciesCount:
		c, err := j.GetDependenciesCount(ctx)
		return r.result(fmt.Sprintf("%+v", c), err)
	case difftest.ReadIgnoredChildrenFailures:
		m, err := j.GetIgnoredChildrenFailures(ctx)
		return r.result(strs(m), err)
	case difftest.ReadFailedChildrenValues:
		m, err := j.GetFailedChildrenValues(ctx)
		return r.result(strs(m), err)
	}
	r.t.Fatalf("flow read %q", s.Read)
	return ""
}

// jobView is a job as both readers decode it (Queue.getJob / GetJob),
// rendered for comparison across the two runs: times as present or not,
// the delay field to the minute (the runs' clocks differ by a few ms),
// parent keys without the run's prefix, values as canonical JSON (none and
// null alike), the stack trace by its length.
type jobView struct {
	Name, Data                                     string
	AttemptsMade, AttemptsStarted, Stalled         int64
	Processed, Finished                            bool
	Return, FailedReason, Progress                 string
	Stack                                          int
	ProcessedBy, Deferred, DedupID, Parent, Repeat string
	Priority, DelayMin                             int64
	Attempts                                       int64
	LIFO                                           bool
	CustomID, Backoff                              string
}

// orNull is canonical JSON of raw, "null" when there is none.
func orNull(raw []byte) string {
	if c := canonicalJSON(raw); c != "" {
		return c
	}
	return "null"
}

// progressAsNode is drover's Progress as Node's job reads the same hash:
// Node parses the stored JSON, "0" when there is none, and makes a null 0
// (JSON.parse(progress || '0') ?? 0). So a job that never reported progress
// (nil in drover, documented) and one whose progress was set to null (the
// JSON null in drover) both read as 0 there.
func progressAsNode(p json.RawMessage) string {
	if v := orNull(p); v != "null" {
		return v
	}
	return "0"
}

func (r *programRun) nodeJobView(nj *bullmqoracle.NodeJob) jobView {
	num := func(k string) int64 {
		f, _ := nj.Opts[k].(float64)
		return int64(f)
	}
	// Node's add tests opts.lifo for truth, so a stored 1 is LIFO as
	// drover reads it (seed 846549776).
	lifo := false
	switch v := nj.Opts["lifo"].(type) {
	case bool:
		lifo = v
	case float64:
		lifo = v != 0
	case string:
		lifo = v != ""
	}
	custom, _ := nj.Opts["jobId"].(string)
	backoff := ""
	if bo, ok := nj.Opts["backoff"].(map[string]any); ok {
		d, _ := bo["delay"].(float64)
		backoff = fmt.Sprintf("%v/%d", bo["type"], int64(d))
	} else if d, ok := nj.Opts["backoff"].(float64); ok {
		backoff = fmt.Sprintf("fixed/%d", int64(d))
	}
	return jobView{
		Name: nj.Name, Data: orNull(nj.Data), AttemptsMade: nj.AttemptsMade, AttemptsStarted: nj.AttemptsStarted,
		Stalled: nj.StalledCounter, Processed: msOrZero(nj.ProcessedOn) != 0, Finished: msOrZero(nj.FinishedOn) != 0,
		Return: orNull(nj.ReturnValue), FailedReason: strings.ReplaceAll(nj.FailedReason, r.prefix, "P"), Progress: orNull(nj.Progress), Stack: len(nj.Stacktrace),
		ProcessedBy: nj.ProcessedBy, Deferred: strings.ReplaceAll(nj.DeferredFailure, r.prefix, "P"), DedupID: nj.DeduplicationID,
		Parent: strings.Replace(nj.ParentKey, r.prefix, "P", 1), Repeat: nj.RepeatJobKey,
		Priority: nj.Priority, DelayMin: (nj.Delay + 30_000) / 60_000,
		Attempts: num("attempts"), LIFO: lifo, CustomID: custom, Backoff: backoff,
	}
}

func (r *programRun) droverJobView(dj *drover.Job) jobView {
	parent, backoff := "", ""
	if p := dj.Parent; p != nil {
		parent = strings.Replace(p.Prefix+":"+p.Queue+":"+p.ID, r.prefix, "P", 1)
	}
	if b := dj.Opts.Backoff; b != nil {
		backoff = fmt.Sprintf("%v/%d", b.Type, b.Delay.Milliseconds())
	}
	return jobView{
		Name: dj.Name, Data: orNull(dj.Data), AttemptsMade: int64(dj.AttemptsMade), AttemptsStarted: int64(dj.AttemptsStarted),
		Stalled: int64(dj.StalledCount), Processed: !dj.ProcessedOn.IsZero(), Finished: !dj.FinishedOn.IsZero(),
		Return: orNull(dj.ReturnValue), FailedReason: strings.ReplaceAll(dj.FailedReason, r.prefix, "P"), Progress: progressAsNode(dj.Progress), Stack: len(dj.Stacktrace),
		ProcessedBy: dj.ProcessedBy, Deferred: strings.ReplaceAll(dj.DeferredFailure, r.prefix, "P"), DedupID: dj.DeduplicationID, Parent: parent,
		Repeat: dj.JobSchedulerID, Priority: int64(dj.Priority), DelayMin: (dj.Delay.Milliseconds() + 30_000) / 60_000,
		Attempts: int64(dj.Opts.Attempts), LIFO: dj.Opts.LIFO, CustomID: dj.Opts.JobID, Backoff: backoff,
	}
}
