package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"time"
)

// metric is one row of the table and one JSON line: a number taken from
// every sample of one step, reduced to its median per implementation.
type metric struct {
	name   string // JSON "scenario"
	unit   string
	step   string
	higher bool // higher is better
	desc   string
	get    func(s sample) (float64, bool)
}

// ratioFloor is a metric's resolution: ratios use max(value, floor), so a
// value at or below it counts as on time instead of giving an unbounded
// ratio. Delayed lateness can be slightly negative: BullMQ-layout due times
// are whole milliseconds (add time and delay both truncated or rounded).
var ratioFloor = map[string]float64{"delayed_p50": 1, "delayed_p99": 1, "scheduler_p50": 1, "scheduler_p99": 1}

func perJob(s sample, v float64) float64 { return v / float64(s.N) }

// redisPerJob is a per-job Redis figure of s, when s has Redis deltas.
func redisPerJob(f func(d *srvDelta) float64) func(s sample) (float64, bool) {
	return func(s sample) (float64, bool) {
		if s.Redis == nil {
			return 0, false
		}
		return perJob(s, f(s.Redis)), true
	}
}

func serverCPUPerJob(s sample) (float64, bool) {
	if s.Redis != nil {
		return perJob(s, s.Redis.CPUSecs*1e6), true
	}
	if s.PGCPUs > 0 {
		return perJob(s, s.PGCPUs*1e6), true
	}
	return 0, false
}

func extra(k string) func(s sample) (float64, bool) {
	return func(s sample) (float64, bool) { v, ok := s.Peer.Extra[k]; return v, ok }
}

func metricsFor(o options) []metric {
	cmds := func(d *srvDelta) float64 { return float64(d.Calls) }
	rtts := func(d *srvDelta) float64 { return float64(d.Reads) }
	cpu := func(d *srvDelta) float64 { return d.CPUSecs * 1e6 }
	ms := []metric{
		{"add_single", "jobs/s", "add_single", true, "add singly, 8 concurrent producers", rate},
		{"add_bulk50", "jobs/s", "add_bulk50", true, "bulk add, chunks of 50", rate},
		{"add_bulk1000", "jobs/s", "add_bulk1000", true, "bulk add, chunks of 1,000", rate},
		{"process_c1", "jobs/s", "process_c1", true, "process no-op jobs, concurrency 1", rate},
		{"process_c10", "jobs/s", "process_c10", true, "process no-op jobs, concurrency 10", rate},
		{"process_c100", "jobs/s", "process_c100", true, "process no-op jobs, concurrency 100", rate},
		{"process_c500", "jobs/s", "process_c500", true, "process no-op jobs, concurrency 500", rate},
		{"process_remove_c10", "jobs/s", "process_remove_c10", true, "process no-op jobs added with removeOnComplete true, c10", rate},
		{"process_remove_c100", "jobs/s", "process_remove_c100", true, "process no-op jobs added with removeOnComplete true, c100", rate},
		{"redis_cpu_us_per_job_remove_c100", "µs/job", "process_remove_c100", false, "Redis CPU per job, removeOnComplete true, c100",
			func(s sample) (float64, bool) {
				if s.Redis == nil {
					return 0, false
				}
				return perJob(s, s.Redis.CPUSecs*1e6), true
			}},
		{"pickup_p50", "ms", "pickup", false, "idle pickup latency add→start, p50", func(s sample) (float64, bool) { return s.Peer.P50ms, true }},
		{"pickup_p99", "ms", "pickup", false, "idle pickup latency add→start, p99", func(s sample) (float64, bool) { return s.Peer.P99ms, true }},
		{"delayed_p50", "ms", "delayed", false, "delayed-job lateness due→start, p50 (ratio floor 1 ms)", func(s sample) (float64, bool) { return s.Peer.P50ms, true }},
		{"delayed_p99", "ms", "delayed", false, "delayed-job lateness due→start, p99 (ratio floor 1 ms)", func(s sample) (float64, bool) { return s.Peer.P99ms, true }},
		{"retry", "jobs/s", "retry", true, "retry-heavy: fail twice (backoff 0), then succeed; c100", rate},
		{"redis_cmds_per_job_c100", "cmds/job", "process_c100", false, "Redis commands per job (commandstats, scripts' inner commands included), c100",
			func(s sample) (float64, bool) {
				if s.Redis == nil {
					return 0, false
				}
				return perJob(s, float64(s.Redis.Calls)), true
			}},
		{"redis_scripts_per_job_c100", "scripts/job", "process_c100", false, "EVALSHA/EVAL calls per job, c100",
			func(s sample) (float64, bool) {
				if s.Redis == nil {
					return 0, false
				}
				return perJob(s, float64(s.Redis.Evals)), true
			}},
		{"redis_cpu_us_per_job_c100", "µs/job", "process_c100", false, "Redis CPU per job (INFO cpu user+sys), c100",
			func(s sample) (float64, bool) {
				if s.Redis == nil {
					return 0, false
				}
				return perJob(s, s.Redis.CPUSecs*1e6), true
			}},
		{"server_cpu_us_per_job_c100", "µs/job", "process_c100", false, "server CPU per job: Redis, or PostgreSQL for River (/proc), c100",
			func(s sample) (float64, bool) {
				if s.Redis != nil {
					return perJob(s, s.Redis.CPUSecs*1e6), true
				}
				if s.PGCPUs > 0 {
					return perJob(s, s.PGCPUs*1e6), true
				}
				return 0, false
			}},
		{"client_cpu_us_per_job_c100", "µs/job", "process_c100", false, "worker process CPU per job (user+sys over the processing phase), c100",
			func(s sample) (float64, bool) { return perJob(s, s.Peer.CPUus), s.Peer.CPUus > 0 }},
		{"worker_rss_mb_c100", "MB", "process_c100", false, "worker process peak RSS, c100",
			func(s sample) (float64, bool) { return float64(s.MaxRSSKB) / 1024, s.MaxRSSKB > 0 }},
		{"mem_inflight_rss_mb", "MB", "mem", false, "worker RSS with 10,000 sleeping jobs in flight (c10,000)",
			func(s sample) (float64, bool) { return float64(s.Peer.RSSkb) / 1024, s.Peer.RSSkb > 0 }},
		{"mem_peak_rss_mb", "MB", "mem", false, "worker peak RSS over the memory scenario",
			func(s sample) (float64, bool) { return float64(s.MaxRSSKB) / 1024, s.MaxRSSKB > 0 }},
	}
	for _, c := range []int{1, 10} {
		st := fmt.Sprintf("process_c%d", c)
		ms = append(ms,
			metric{fmt.Sprintf("redis_cmds_per_job_c%d", c), "cmds/job", st, false, fmt.Sprintf("Redis commands per job (commandstats, scripts' inner commands included), c%d", c), redisPerJob(cmds)},
			metric{fmt.Sprintf("redis_rtt_per_job_c%d", c), "reads/job", st, false, fmt.Sprintf("round trips per job: Redis read events (INFO stats total_reads_processed), c%d", c), redisPerJob(rtts)},
			metric{fmt.Sprintf("redis_cpu_us_per_job_c%d", c), "µs/job", st, false, fmt.Sprintf("Redis CPU per job (INFO cpu user+sys), c%d", c), redisPerJob(cpu)},
		)
	}
	ms = append(ms,
		metric{"redis_rtt_per_job_c100", "reads/job", "process_c100", false, "round trips per job: Redis read events (INFO stats total_reads_processed), c100", redisPerJob(rtts)},
		metric{"redis_instr_per_job_c100", "Ir/job", "callgrind_c100", false, fmt.Sprintf("Redis instructions per processed job under callgrind (deterministic), c100, %d jobs", o.NCallgrind), redisPerJob(func(d *srvDelta) float64 { return float64(d.Instr) })},
		metric{"redis_cpu_us_per_add_single", "µs/job", "add_single", false, "Redis CPU per added job, add_single", redisPerJob(cpu)},
		metric{"redis_rtt_per_add_single", "reads/job", "add_single", false, "round trips per added job, add_single", redisPerJob(rtts)},
		metric{"add_dedup50", "adds/s", "add_dedup50", true, "add singly, 8 producers, every id twice (50 % duplicates: BullMQ/drover deduplication id, asynq TaskID, River unique by args)", rate},
		metric{"process_ids_c100", "jobs/s", "process_ids_c100", true, "process no-op jobs with custom job ids (o1, o2, …: BullMQ/drover jobId, asynq TaskID), c100", rate},
		metric{"process_ids_c100_client_cpu", "µs/job", "process_ids_c100", false, "worker process CPU per job with custom job ids, c100",
			func(s sample) (float64, bool) { return perJob(s, s.Peer.CPUus), s.Peer.CPUus > 0 }},
		metric{"add_single_100kb", "jobs/s", "add_single_100kb", true, fmt.Sprintf("add singly, 8 producers, 100 KB payloads (%d jobs)", o.NBig), rate},
		metric{"process_100kb_c100", "jobs/s", "process_100kb_c100", true, fmt.Sprintf("process 100 KB-payload jobs, c100 (%d jobs)", o.NBig), rate},
		metric{"server_cpu_us_per_job_100kb", "µs/job", "process_100kb_c100", false, "server CPU per 100 KB job processed, c100", serverCPUPerJob},
		metric{"retry_exp", "jobs/s", "retry_exp", true, "retry-heavy: fail twice with exponential backoff (5 ms doubling) and 50 % jitter, then succeed; c100", rate},
		metric{"flow_100", "flows/s", "flow_100", true, fmt.Sprintf("%d flows, each a parent with 100 children, added one by one to a c100 worker, until every job completed", o.NFlows), rate},
		metric{"flow_100_server_cpu", "µs/flow", "flow_100", false, "server CPU per flow of 101 jobs (add and processing)", serverCPUPerJob},
		metric{"scheduler_p50", "ms", "scheduler", false, fmt.Sprintf("job scheduler every 100 ms, %d runs: lateness start − due, p50 (ratio floor 1 ms)", o.NSchedRuns), func(s sample) (float64, bool) { return s.Peer.P50ms, true }},
		metric{"scheduler_p99", "ms", "scheduler", false, "job scheduler every 100 ms: lateness start − due, p99 (ratio floor 1 ms)", func(s sample) (float64, bool) { return s.Peer.P99ms, true }},
		metric{"scheduler_server_cpu", "µs/run", "scheduler", false, "server CPU per scheduler run (the server idles between runs: mostly blocking-call wake-ups)", serverCPUPerJob},
	)
	for _, b := range o.Grow {
		st := "grow_" + sizeName(b)
		ms = append(ms,
			metric{st, "jobs/s", st, true, fmt.Sprintf("process %d jobs at c100 out of a backlog of %d waiting", o.NGrow, b), rate},
			metric{st + "_server_cpu", "µs/job", st, false, fmt.Sprintf("server CPU per job, backlog %d", b), serverCPUPerJob},
		)
	}
	st := "grow_completed_" + sizeName(o.NCompleted)
	ms = append(ms,
		metric{st, "jobs/s", st, true, fmt.Sprintf("process %d jobs at c100 with %d jobs kept in completed (retention off)", o.NGrow, o.NCompleted), rate},
		metric{st + "_server_cpu", "µs/job", st, false, fmt.Sprintf("server CPU per job, %d kept completed", o.NCompleted), serverCPUPerJob},
	)
	instr := redisPerJob(func(d *srvDelta) float64 { return float64(d.Instr) })
	for _, b := range o.Grow {
		st := "grow_" + sizeName(b)
		ms = append(ms,
			metric{st + "_cmds", "cmds/job", st, false, fmt.Sprintf("Redis commands per job, backlog %d", b), redisPerJob(cmds)},
			metric{st + "_instr", "Ir/job", "callgrind_" + st, false, fmt.Sprintf("Redis instructions per job under callgrind, backlog %d", b), instr},
		)
	}
	ms = append(ms,
		metric{st + "_cmds", "cmds/job", st, false, fmt.Sprintf("Redis commands per job, %d kept completed", o.NCompleted), redisPerJob(cmds)},
		metric{st + "_instr", "Ir/job", "callgrind_" + st, false, fmt.Sprintf("Redis instructions per job under callgrind, %d kept completed", o.NCompleted), instr},
	)
	for _, e := range []struct{ k, d string }{
		{"api_overview", "dashboard GET /api/overview"},
		{"api_storm", "dashboard GET /api/queues/{q}/delayed (storm analytics)"},
		{"api_failed_page", "dashboard GET /api/queues/{q}/jobs?state=failed (first page)"},
		{"cli_queues", "`drover queues` (process start included)"},
		{"cli_jobs_failed", "`drover jobs --state failed <q>` first page (process start included)"},
	} {
		ms = append(ms, metric{"bigqueue_" + e.k, "ms", "bigqueue", false, fmt.Sprintf("%s on a %d-job queue, median of %d", e.d, o.NBigQueue, 9), extra(e.k + "_ms")})
	}
	return ms
}

func rate(s sample) (float64, bool) { return s.Peer.Rate, s.Peer.Rate > 0 }

type cell struct {
	median float64
	n      int // samples
	ok     bool
}

type row struct {
	m     metric
	cells map[string]cell
	load  [2]float64 // lowest and highest 1-minute load average over the row's samples
}

type report struct {
	loadStart, loadEnd string
	steps              []step
	o                  options
	impls              []string
	rows               []row
	samples            []sample
	machine            []string
	notes              []string
	elapsed            time.Duration
	errCount           map[string]int
	errFirst           map[string]string
}

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func buildReport(o options, e *env, impls []string, steps []step, samples []sample, elapsed time.Duration) *report {
	r := &report{steps: steps, o: o, impls: impls, samples: samples, notes: e.notes, loadStart: e.loadStart, loadEnd: e.loadEnd, elapsed: elapsed, errCount: map[string]int{}, errFirst: map[string]string{}}
	ran := map[string]bool{}
	for _, s := range samples {
		ran[s.Step] = true
		if s.Err != "" {
			k := s.Step + "/" + s.Impl
			r.errCount[k]++
			if r.errFirst[k] == "" {
				r.errFirst[k] = firstLine([]byte(s.Err))
			}
		}
	}
	for _, m := range metricsFor(o) {
		if !ran[m.step] {
			continue
		}
		rw := row{m: m, cells: map[string]cell{}, load: [2]float64{math.Inf(1), 0}}
		for _, s := range samples {
			if s.Step == m.step {
				rw.load[0], rw.load[1] = min(rw.load[0], s.Load[0]), max(rw.load[1], s.Load[0])
			}
		}
		for _, im := range allImpls {
			var vs []float64
			for _, s := range samples {
				if s.Step == m.step && s.Impl == im && s.Err == "" {
					if v, ok := m.get(s); ok {
						vs = append(vs, v)
					}
				}
			}
			if len(vs) > 0 {
				rw.cells[im] = cell{median: median(vs), n: len(vs), ok: true}
			}
		}
		r.rows = append(r.rows, rw)
	}
	r.machine = machine(e)
	return r
}

// ratioPeers are the columns drover is compared with, in the table's order.
// Against the floor a ratio is at most 1: 1 would be no Redis work beyond
// what BullMQ's format makes every worker do.
var ratioPeers = []string{"bullmq", "asynq", "river", "floor"}

// ratio of drover to peer, oriented so that > 1 means drover is better.
func (rw row) ratio(peer string) (float64, bool) {
	d, p := rw.cells["drover"], rw.cells[peer]
	if !d.ok || !p.ok {
		return 0, false
	}
	dv, pv := max(d.median, ratioFloor[rw.m.name]), max(p.median, ratioFloor[rw.m.name])
	if dv <= 0 || pv <= 0 {
		return 0, false
	}
	if rw.m.higher {
		return dv / pv, true
	}
	return pv / dv, true
}

func round(v float64) float64 {
	if v == 0 {
		return 0
	}
	digits := 3 - int(math.Floor(math.Log10(math.Abs(v)))) // ~4 significant digits
	if digits < 0 {
		digits = 0
	}
	p := math.Pow(10, float64(digits))
	return math.Round(v*p) / p
}

func (r *report) jsonLines() []string {
	var out []string
	for _, rw := range r.rows {
		var b strings.Builder
		fmt.Fprintf(&b, `{"scenario":%q,"unit":%q`, rw.m.name, rw.m.unit)
		for _, im := range allImpls {
			if c := rw.cells[im]; c.ok {
				fmt.Fprintf(&b, `,%q:%v`, im, round(c.median))
			} else {
				fmt.Fprintf(&b, `,%q:null`, im)
			}
		}
		for _, peer := range ratioPeers {
			if v, ok := rw.ratio(peer); ok {
				fmt.Fprintf(&b, `,"drover_vs_%s":%v`, peer, round(v))
			} else {
				fmt.Fprintf(&b, `,"drover_vs_%s":null`, peer)
			}
		}
		b.WriteString("}")
		out = append(out, b.String())
	}
	return out
}

func fmtNum(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1000:
		return fmt.Sprintf("%.0f", v)
	case a >= 100:
		return fmt.Sprintf("%.1f", v)
	case a >= 10:
		return fmt.Sprintf("%.2f", v)
	default:
		return fmt.Sprintf("%.3f", v)
	}
}

func (r *report) markdown() string {
	var b strings.Builder
	name := map[string]string{"drover": "drover", "bullmq": "BullMQ", "asynq": "asynq", "river": "River", "floor": "floor"}
	fmt.Fprintf(&b, "# drover side-by-side benchmark\n\n")
	fmt.Fprintf(&b, "Written by `bench/cmd/compare` (`make -C bench compare`) on %s, in %s.\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), r.elapsed.Round(time.Second))
	fmt.Fprintf(&b, "Medians of %d runs per cell; implementations alternate (the order rotates every row and run, and runs backwards every other time, so no implementation always follows the same one), and each measured process starts once the machine is quiet (a 100 ms window with at most 15 %% of the CPUs busy, waited for up to 5 s). Ratios are oriented so that > 1 means drover is better.\n\n", r.o.Runs)
	b.WriteString("## Machine\n\n")
	for _, m := range r.machine {
		fmt.Fprintf(&b, "- %s\n", m)
	}
	fmt.Fprintf(&b, "- Load average (1, 5, 15 min; /proc/loadavg) when the runs began: %s; when they ended: %s. The `load` column is the lowest–highest 1-minute load average seen just before the row's measured processes.\n", r.loadStart, r.loadEnd)
	fmt.Fprintf(&b, "\nSizes: n=%d (add, bulk add, process c10–c500), %d at c1, %d pickup, %d delayed, %d retry-heavy, %d in flight for memory.\n\n",
		r.o.N, r.o.NC1, r.o.NLatency, r.o.NDelayed, r.o.NRetry, r.o.NMem)
	b.WriteString("## Results\n\n| scenario | unit | better |")
	for _, im := range allImpls {
		fmt.Fprintf(&b, " %s |", name[im])
	}
	b.WriteString(" drover/BullMQ | drover/asynq | drover/River | drover/floor | load |\n|---|---|---|")
	b.WriteString(strings.Repeat("---:|", len(allImpls)+len(ratioPeers)+1))
	b.WriteString("\n")
	for _, rw := range r.rows {
		better := "lower"
		if rw.m.higher {
			better = "higher"
		}
		fmt.Fprintf(&b, "| %s<br><sub>%s</sub> | %s | %s |", rw.m.name, rw.m.desc, rw.m.unit, better)
		for _, im := range allImpls {
			c := rw.cells[im]
			switch {
			case c.ok && c.n < r.runsOf(rw.m.step):
				fmt.Fprintf(&b, " %s (%d/%d runs) |", fmtNum(c.median), c.n, r.runsOf(rw.m.step))
			case c.ok:
				fmt.Fprintf(&b, " %s |", fmtNum(c.median))
			default:
				fmt.Fprintf(&b, " %s |", r.na(rw.m, im))
			}
		}
		for _, peer := range ratioPeers {
			if v, ok := rw.ratio(peer); ok {
				fmt.Fprintf(&b, " %.2f× |", v)
			} else {
				b.WriteString(" – |")
			}
		}
		fmt.Fprintf(&b, " %.1f–%.1f |\n", rw.load[0], rw.load[1])
	}
	if len(r.errCount) > 0 {
		b.WriteString("\n## Failed samples\n\n")
		keys := make([]string, 0, len(r.errCount))
		for k := range r.errCount {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			fmt.Fprintf(&b, "- %s: %d of %d runs failed, first: `%s` (every error is in the JSON samples, peer stderr in results/logs/)\n", k, r.errCount[k], r.o.Runs, r.errFirst[k])
		}
	}
	b.WriteString("\n## Notes\n\n")
	for _, n := range r.notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	b.WriteString(`- n/a: asynq has no bulk enqueue API; flow_100 and scheduler are BullMQ and drover only (asynq and River have no parent/child flows; asynq's cron schedules are whole seconds; River's periodic jobs are not wired into the peer, so not measured); Redis rows do not apply to River (PostgreSQL), whose server CPU is in server_cpu_us_per_job_c100.
- Configuration: BullMQ, asynq and drover at their defaults except concurrency (and attempts/backoff 0 for the retry scenario); asynq's idle poll (TaskCheckInterval) is 1 s and its scheduled/retry forwarder (DelayedTaskCheckInterval) 5 s, which set its pickup, lateness and retry numbers. River: FetchCooldown 1 ms (its minimum), FetchPollInterval ` + r.o.RiverPoll.String() + `, MaxWorkers = concurrency, pgxpool MaxConns 20, immediate retry policy; its job scheduler (scheduled → available, 5 s look-ahead) runs every 5 s and is not configurable, so its delayed lateness depends on where that tick falls.
- Delayed lateness is signed: BullMQ-layout due times are whole milliseconds, so a drover or BullMQ value slightly below 0 means on time; ratios treat values under 1 ms as 1 ms.
- Server settings: redis-server with persistence off; PostgreSQL with fsync, synchronous_commit and full_page_writes off (no durability either side).
- Throughput runs from worker start until the backend shows every job finished; CPU per job is the worker process' user+sys over that phase; peak RSS is the process' rusage maxrss.
- The machine is shared with other work; medians of alternating runs damp, but do not remove, that noise.
- Round trips (redis_rtt_*) are Redis read events (INFO stats total_reads_processed) over the measured process: a pipeline read in one go counts once; a blocked client's wake-up is not a read. The harness' own INFO calls add 3 reads per sample.
- grow_*: the worker stops once -n-grow jobs were handled (the rest of the backlog stays); the backlog is seeded with each implementation's bulk add (asynq: 8 producers). grow_completed_*: the completed jobs are written by a Lua loader in BullMQ's layout (so BullMQ, drover and the floor only; the floor keeps what it completes in that set too). bigqueue (drover only): the queue is written by a Lua loader (90 % waiting, 5 % delayed, 3 % completed, 2 % failed); the dashboard runs in the peer on a loopback HTTP server, the CLI is the built binary, run cold (the dashboard closed and its published queue list deleted before each call, so drover queues reads the queue registry).
- floor (add_single, the process rows, pickup, callgrind_c100 and grow_* (grow_completed included) only) is not a queue. Its add is one script call per job with only what BullMQ's format writes for a plain add (id counter, job hash, wait list, the added and waiting events, the marker). Its worker is one loop making one Lua call per batch of c jobs that finishes the previous batch and takes the next with only the Redis writes and reads BullMQ's format requires of every worker (lock check, active list, lock, result fields, completed set, the completed and active events, the job hash read; bench/cmd/peer/floor.go), on jobs added by drover; when nothing is waiting it blocks on the queue's marker (the pickup row: a floor add, the marker wake-up, one fetch call). A real producer or worker does more (options, deduplication, pause, concurrency and rate-limit checks, delayed promotion, markers, stalled bookkeeping, retention, lock renewal), so its Redis CPU per job cannot go below the floor's: drover/floor says how close drover comes (1 would be at the floor).
- callgrind_c100: a second redis-server runs under valgrind's callgrind with instrumentation switched on only around the measured worker process; Ir per job does not depend on load. The grow_*_instr rows run the grow steps (drover only) on that server the same way (-callgrind-grow).
`)
	return b.String()
}

// runsOf is how many runs the step was planned for.
func (r *report) runsOf(step string) int {
	for _, st := range r.steps {
		if st.name == step && st.heavy {
			return min(r.o.HeavyRuns, r.o.Runs)
		}
	}
	return r.o.Runs
}

// redisOnly reports whether m measures Redis itself (commands, round trips,
// script calls, instructions), which River, on PostgreSQL, has none of.
func redisOnly(m metric) bool {
	switch m.unit {
	case "cmds/job", "reads/job", "scripts/job", "Ir/job":
		return true
	}
	return strings.HasPrefix(m.name, "redis_")
}

func (r *report) na(m metric, im string) string {
	for _, st := range r.steps {
		if st.name == m.step && !st.applies(im) {
			return "n/a"
		}
	}
	if im == "asynq" && strings.HasPrefix(m.step, "add_bulk") {
		return "n/a"
	}
	if im == "river" && redisOnly(m) {
		return "n/a"
	}
	if !slices.Contains(r.impls, im) {
		return "–"
	}
	return "failed"
}

func (r *report) write(o options) error {
	if err := os.MkdirAll(filepath.Dir(o.Out), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(o.Out, []byte(r.markdown()), 0o644); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(struct {
		Machine []string `json:"machine"`
		Samples []sample `json:"samples"`
	}{r.machine, r.samples}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(o.JSONOut, raw, 0o644)
}

// machine describes where the numbers came from.
func machine(e *env) []string {
	var out []string
	cpu := "?"
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	out = append(out, fmt.Sprintf("CPU: %s, %d cores (runtime.NumCPU)", cpu, runtime.NumCPU()))
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		if m := regexp.MustCompile(`MemTotal:\s+(\d+) kB`).FindSubmatch(b); m != nil {
			var kb int64
			fmt.Sscan(string(m[1]), &kb)
			out = append(out, fmt.Sprintf("Memory: %.1f GiB", float64(kb)/1024/1024))
		}
	}
	out = append(out, "redis-server "+e.redis.Version(context.Background()))
	if e.pg != nil {
		out = append(out, "PostgreSQL "+e.pg.version)
	}
	out = append(out, "Go "+strings.TrimPrefix(runtime.Version(), "go"))
	if v, err := exec.Command("node", "--version").Output(); err == nil {
		out = append(out, "Node "+strings.TrimSpace(strings.TrimPrefix(string(v), "v")))
	}
	var versions []string
	if b, err := os.ReadFile("node/node_modules/bullmq/package.json"); err == nil {
		var p struct{ Version string }
		if json.Unmarshal(b, &p) == nil {
			versions = append(versions, "bullmq "+p.Version)
		}
	}
	if b, err := os.ReadFile("go.mod"); err == nil {
		for _, mod := range [][2]string{
			{"asynq", "github.com/hibiken/asynq"}, {"river", "github.com/riverqueue/river"},
			{"go-redis", "github.com/redis/go-redis/v9"}, {"pgx", "github.com/jackc/pgx/v5"},
		} {
			if m := regexp.MustCompile(regexp.QuoteMeta(mod[1]) + ` (v\S+)`).FindSubmatch(b); m != nil {
				versions = append(versions, mod[0]+" "+string(m[1]))
			}
		}
	}
	if out2, err := exec.Command("git", "-C", "..", "log", "-1", "--format=%h %s", "--", ".", ":!bench").Output(); err == nil {
		versions = append(versions, "drover @ "+strings.TrimSpace(string(out2)))
	}
	out = append(out, "Versions: "+strings.Join(versions, ", "))
	return out
}
