// Command compare runs drover's side-by-side benchmark (issue 7): drover,
// Node BullMQ, asynq and River, the same scenarios, alternating, several runs
// each, against one fresh redis-server and one throwaway PostgreSQL cluster.
//
// Every measured step runs the implementation in its own OS process (the Go
// peer bench/bin/peer or the Node peer bench/node/peer.mjs), so that the
// process' CPU time and peak resident memory are its own. Redis' cost is read
// from INFO commandstats and INFO cpu deltas around the measured process.
//
// It writes a Markdown table of medians and ratios (bench/results/latest.md),
// every sample (bench/results/latest.json), and prints one JSON line per
// scenario on stdout. Progress goes to stderr. Run it from bench/ (run.sh
// does), see bench/README.md.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// impls in their canonical column order. "floor" is not a queue: the least
// Redis work per job that BullMQ's format allows (bench/cmd/peer/floor.go),
// measured on the process rows only.
var allImpls = []string{"drover", "bullmq", "asynq", "river", "floor"}

type options struct {
	N           int
	NC1         int
	NLatency    int
	NDelayed    int
	NRetry      int
	NMem        int
	CMem        int
	Runs        int
	Only        []string
	Out         string
	JSONOut     string
	LogDir      string
	SkipInstall bool
	PeerTimeout time.Duration
	RiverPoll   time.Duration
	GapMS       float64
	// Issue 16's rows.
	NBig       int   // jobs of the 100 KB payload scenarios
	NFlows     int   // flows (a parent with FlowChildren children) of flow_100
	NSchedRuns int   // runs of the job scheduler of scheduler
	NGrow      int   // jobs processed out of each backlog
	Grow       []int // backlog sizes (waiting jobs)
	NCompleted int   // jobs kept in completed for grow_completed
	NBigQueue  int   // jobs of the bigqueue (API/CLI) scenario
	Callgrind  bool  // also run callgrind_c100 (redis-server under valgrind)
	HeavyRuns  int   // runs of the heavy steps
	NCallgrind int   // jobs of callgrind_c100
	// CallgrindGrow also runs the grow_* backlogs (drover) under callgrind:
	// Redis instructions per job at each queue size.
	CallgrindGrow bool
}

func main() {
	var o options
	var only string
	flag.IntVar(&o.N, "n", 50000, "jobs for add, bulk add and process at concurrency >= 10")
	flag.IntVar(&o.NC1, "n-c1", 0, "jobs for process at concurrency 1 (default n/10)")
	flag.IntVar(&o.NLatency, "n-latency", 1000, "jobs for idle pickup latency")
	flag.IntVar(&o.NDelayed, "n-delayed", 1000, "jobs for delayed-job lateness")
	flag.IntVar(&o.NRetry, "n-retry", 0, "jobs for retry-heavy (each runs 3 times; default n/5)")
	flag.IntVar(&o.NMem, "n-mem", 10000, "jobs in flight for the memory scenario (= its concurrency)")
	flag.IntVar(&o.Runs, "runs", 3, "runs of every scenario for every implementation (medians are reported)")
	flag.StringVar(&only, "only", "", "comma-separated filter: implementation names (drover,bullmq,asynq,river,floor) and/or scenario name prefixes (add,process_c100,pickup,delayed,retry,mem)")
	flag.StringVar(&o.Out, "out", "results/latest.md", "Markdown table")
	flag.StringVar(&o.JSONOut, "json-out", "results/latest.json", "every sample, as JSON")
	flag.StringVar(&o.LogDir, "log-dir", "results/logs", "peer stderr logs")
	flag.BoolVar(&o.SkipInstall, "skip-install", false, "do not install missing peers (apt-get, npm ci)")
	flag.DurationVar(&o.PeerTimeout, "peer-timeout", 5*time.Minute, "kill a peer process after this long")
	flag.DurationVar(&o.RiverPoll, "river-poll", 10*time.Millisecond, "River FetchPollInterval")
	flag.Float64Var(&o.GapMS, "gap-ms", 5, "mean gap between adds in the pickup-latency scenario")
	flag.IntVar(&o.NBig, "n-big", 2000, "jobs of the 100 KB payload scenarios")
	flag.IntVar(&o.NFlows, "n-flows", 50, "flows of flow_100 (each a parent with 100 children)")
	flag.IntVar(&o.NSchedRuns, "n-sched", 50, "runs of the 100 ms job scheduler of the scheduler step")
	flag.IntVar(&o.NGrow, "n-grow", 10000, "jobs processed out of each backlog (grow_*)")
	grow := flag.String("grow", "10000,100000,1000000", "backlog sizes of the grow_* scenarios, comma-separated")
	flag.IntVar(&o.NCompleted, "n-completed", 1000000, "completed jobs kept for grow_completed")
	flag.IntVar(&o.NBigQueue, "n-bigqueue", 1000000, "jobs of the bigqueue (dashboard API and CLI on a big queue) scenario")
	flag.BoolVar(&o.Callgrind, "callgrind", true, "run callgrind_c100: Redis instructions per job under valgrind (needs valgrind)")
	flag.IntVar(&o.NCallgrind, "n-callgrind", 5000, "jobs of callgrind_c100")
	flag.BoolVar(&o.CallgrindGrow, "callgrind-grow", true, "with -callgrind, also run the grow_* backlogs and grow_completed for drover under callgrind (Redis instructions per job at each size; about 5 min for the 1M seeds)")
	flag.IntVar(&o.HeavyRuns, "heavy-runs", 1, "runs of the heavy steps (bigqueue, whose rows are medians of 9 calls each, and the callgrind rows, which do not depend on load)")
	flag.Parse()
	for _, g := range strings.Split(*grow, ",") {
		if g = strings.TrimSpace(g); g != "" {
			v, err := strconv.Atoi(g)
			if err != nil || v < 0 {
				fmt.Fprintf(os.Stderr, "compare: -grow: bad size %q\n", g)
				os.Exit(2)
			}
			o.Grow = append(o.Grow, v)
		}
	}
	o.NC1 = cmpOr(o.NC1, max(o.N/10, 1))
	o.NRetry = cmpOr(o.NRetry, max(o.N/5, 1))
	o.CMem = o.NMem
	for _, f := range strings.Split(only, ",") {
		if f = strings.TrimSpace(f); f != "" {
			o.Only = append(o.Only, f)
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "compare:", err)
		os.Exit(1)
	}
}

func cmpOr(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
}

func run(ctx context.Context, o options) error {
	began := time.Now()
	dir, err := benchDir()
	if err != nil {
		return err
	}
	if err := os.Chdir(dir); err != nil {
		return err
	}
	impls, steps := plan(o)
	if len(impls) == 0 || len(steps) == 0 {
		return fmt.Errorf("-only %q selects nothing", strings.Join(o.Only, ","))
	}
	env, err := prepare(ctx, o, impls, steps)
	if err != nil {
		return err
	}
	defer env.Close()

	if err := os.MkdirAll(o.LogDir, 0o755); err != nil {
		return err
	}
	env.loadStart = loadString()
	var samples []sample
	total := o.Runs * len(steps) * len(impls)
	done := 0
	for r := range o.Runs {
		for si, st := range steps {
			for k := range impls {
				// Alternate: rotate the order every step and every run so no
				// implementation always runs first, and walk it backwards
				// every other time: a rotation alone keeps who follows whom,
				// and every row without a floor ran drover right after
				// River (see waitQuiet).
				pos := (k + r + si) % len(impls)
				if (r+si)%2 == 1 {
					pos = (len(impls) - 1 - k + r + si) % len(impls)
				}
				im := impls[pos]
				if !st.applies(im) || st.heavy && r >= o.HeavyRuns {
					continue
				}
				if err := ctx.Err(); err != nil {
					return err
				}
				s := env.measure(ctx, o, r+1, st, im)
				done++
				if s.Err != "" {
					logf("[%d/%d] run %d %-13s %-7s ERROR %s", done, total, r+1, st.name, im, firstLine([]byte(s.Err)))
				} else {
					logf("[%d/%d] run %d %-13s %-7s %s", done, total, r+1, st.name, im, s.summary())
				}
				samples = append(samples, s)
			}
		}
	}
	env.loadEnd = loadString()
	rep := buildReport(o, env, impls, steps, samples, time.Since(began))
	if err := rep.write(o); err != nil {
		return err
	}
	for _, line := range rep.jsonLines() {
		fmt.Println(line)
	}
	out := o.Out
	if !filepath.IsAbs(out) {
		out = filepath.Join("bench", out)
	}
	logf("done in %s; table in %s", time.Since(began).Round(time.Second), out)
	return nil
}

// benchDir finds the bench module's directory from the working directory.
func benchDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for _, d := range []string{wd, filepath.Join(wd, "bench")} {
		b, err := os.ReadFile(filepath.Join(d, "go.mod"))
		if err == nil && strings.Contains(string(b), "module github.com/seed40057009/drover/bench\n") {
			return d, nil
		}
	}
	return "", fmt.Errorf("run from the repository root or bench/ (no bench go.mod under %s)", wd)
}

// step is one scenario: optional seeding invocations and the measured one.
type step struct {
	name    string
	pre     []string // peer flags of a seeding process run as drover (BullMQ-layout loaders); nil: none
	seed    []string // peer flags of the seeding process; nil: none
	args    []string // peer flags of the measured process
	n       int
	server  bool     // take Redis/PostgreSQL deltas around the measured process
	without []string // implementations it does not apply to
	// callgrind: measured on the redis-server that runs under valgrind.
	callgrind bool
	// heavy: runs only -heavy-runs times (the 1M-job bigqueue, valgrind).
	heavy bool
	// floor: the "floor" pseudo-implementation runs this step (add_single,
	// the plain process rows, pickup, callgrind_c100, the grow_* backlogs
	// and grow_completed); it runs nothing else.
	floor bool
}

func (s step) applies(impl string) bool {
	if impl == "floor" {
		return s.floor
	}
	return !slices.Contains(s.without, impl)
}

func plan(o options) (impls []string, steps []step) {
	f := func(k string, v any) string { return fmt.Sprintf("--%s=%v", k, v) }
	process := func(c, n int) step {
		return step{
			name: fmt.Sprintf("process_c%d", c), n: n, server: true, floor: true,
			seed: []string{f("scenario", "seed"), f("n", n)},
			args: []string{f("scenario", "process"), f("n", n), f("c", c)},
		}
	}
	processRemove := func(c, n int) step {
		return step{
			name: fmt.Sprintf("process_remove_c%d", c), n: n, server: true, without: []string{"river"},
			seed: []string{f("scenario", "seed"), f("n", n), f("remove-on-complete", true)},
			args: []string{f("scenario", "process"), f("n", n), f("c", c), f("remove-on-complete", true)},
		}
	}
	all := []step{
		{name: "add_single", n: o.N, server: true, floor: true, args: []string{f("scenario", "add_single"), f("n", o.N), f("producers", 8)}},
		// asynq has no bulk enqueue API: n/a (bench/README.md).
		{name: "add_bulk50", n: o.N, without: []string{"asynq"}, args: []string{f("scenario", "add_bulk"), f("n", o.N), f("chunk", 50)}},
		{name: "add_bulk1000", n: o.N, without: []string{"asynq"}, args: []string{f("scenario", "add_bulk"), f("n", o.N), f("chunk", 1000)}},
		process(1, o.NC1),
		process(10, o.N),
		process(100, o.N),
		process(500, o.N),
		{name: "pickup", n: o.NLatency, floor: true, args: []string{f("scenario", "latency"), f("n", o.NLatency), f("c", 10), f("gap-ms", o.GapMS), f("warmup-ms", 500)}},
		{name: "delayed", n: o.NDelayed, args: []string{f("scenario", "delayed"), f("n", o.NDelayed), f("c", 10), f("warmup-ms", 500), f("lead-ms", 500), f("spread-ms", 1500)}},
		{
			name: "retry", n: o.NRetry, server: true,
			seed: []string{f("scenario", "seed"), f("n", o.NRetry), f("attempts", 3)},
			args: []string{f("scenario", "retry"), f("n", o.NRetry), f("c", 100), f("attempts", 3)},
		},
		{
			name: "retry_exp", n: o.NRetry, server: true,
			seed: []string{f("scenario", "seed"), f("n", o.NRetry), f("attempts", 3), f("backoff", "exp")},
			args: []string{f("scenario", "retry"), f("n", o.NRetry), f("c", 100), f("attempts", 3), f("backoff", "exp")},
		},
		{name: "add_dedup50", n: o.N, server: true, args: []string{f("scenario", "add_single"), f("n", o.N), f("producers", 8), f("dup", 2)}},
		// Custom job ids make every job's stored opts text distinct (BullMQ
		// keeps jobId in opts), which a worker decodes per job. River has no
		// custom ids: n/a.
		{
			name: "process_ids_c100", n: o.N, server: true, without: []string{"river"},
			seed: []string{f("scenario", "seed"), f("n", o.N), f("ids", true)},
			args: []string{f("scenario", "process"), f("n", o.N), f("c", 100), f("ids", true)},
		},
		// removeOnComplete true, as the harness issue 16 quotes measured
		// with: a finished job is deleted instead of kept in completed.
		// asynq deletes finished tasks anyway (its default, the same run as
		// its process rows); River keeps completed rows for its cleaner to
		// delete later: n/a.
		processRemove(10, o.N),
		processRemove(100, o.N),
		{name: "add_single_100kb", n: o.NBig, server: true, args: []string{f("scenario", "add_single"), f("n", o.NBig), f("producers", 8), f("payload-kb", 100)}},
		{
			name: "process_100kb_c100", n: o.NBig, server: true,
			seed: []string{f("scenario", "seed"), f("n", o.NBig), f("payload-kb", 100), f("chunk", 50)},
			args: []string{f("scenario", "process"), f("n", o.NBig), f("c", 100), f("payload-kb", 100)},
		},
		// asynq and River have no parent/child flows (River's workflows are
		// in River Pro): n/a. scheduler: asynq's cron schedules are whole
		// seconds, so a 100 ms scheduler is n/a; River's periodic jobs are
		// not wired into the peer (not measured).
		{
			name: "flow_100", n: o.NFlows, server: true, without: []string{"asynq", "river"},
			args: []string{f("scenario", "flow"), f("n", o.NFlows), f("children", 100), f("c", 100)},
		},
		{
			name: "scheduler", n: o.NSchedRuns, server: true, without: []string{"asynq", "river"},
			args: []string{f("scenario", "scheduler"), f("n", o.NSchedRuns), f("every-ms", 100)},
		},
		{
			name: "mem", n: o.NMem,
			seed: []string{f("scenario", "seed"), f("n", o.NMem)},
			args: []string{f("scenario", "mem"), f("n", o.NMem), f("c", o.CMem)},
		},
	}
	for _, b := range o.Grow {
		all = append(all, step{
			// Not heavy at 1M either: these rows carry issue 16's flatness
			// target, and one run of 10,000 jobs (0.2 s) moves by 10-20 %
			// with a slow moment of the machine; medians of -runs cost about
			// 3 minutes more per run at 1M (five 1M seeds).
			name: "grow_" + sizeName(b), n: o.NGrow, server: true, floor: true,
			seed: []string{f("scenario", "seed"), f("n", b+o.NGrow)},
			args: []string{f("scenario", "process"), f("n", o.NGrow), f("c", 100), f("stop-at-handled", true)},
		})
	}
	all = append(all,
		step{
			// asynq deletes finished tasks and River's completed rows cannot
			// be seeded without running them: BullMQ's layout only. The
			// floor keeps what it completes in the same set, so its drop
			// from grow_10k is what the set's size costs its minimal work
			// (which leaves out the flow-dependency lookups BullMQ's
			// moveToFinished makes: absent keys, dearer among 1M keys).
			name: "grow_completed_" + sizeName(o.NCompleted), n: o.NGrow, server: true, without: []string{"asynq", "river"}, floor: true,
			pre:  []string{f("scenario", "seed_completed"), f("n", o.NCompleted)},
			seed: []string{f("scenario", "seed"), f("n", o.NGrow)},
			args: []string{f("scenario", "process"), f("n", o.NGrow), f("c", 100)},
		},
		step{
			name: "bigqueue", n: o.NBigQueue, without: []string{"bullmq", "asynq", "river"}, heavy: true,
			args: []string{f("scenario", "bigqueue"), f("n", o.NBigQueue)},
		},
	)
	if o.Callgrind {
		all = append(all, step{
			name: "callgrind_c100", n: o.NCallgrind, server: true, callgrind: true, without: []string{"river"}, heavy: true, floor: true,
			seed: []string{f("scenario", "seed"), f("n", o.NCallgrind)},
			args: []string{f("scenario", "process"), f("n", o.NCallgrind), f("c", 100)},
		})
	}
	if o.Callgrind && o.CallgrindGrow {
		// The grow_* steps again on the server under callgrind: how Redis'
		// work per job changes with the queue's size, free of load noise.
		// drover only: seeding 1M jobs under valgrind takes minutes.
		others := []string{"bullmq", "asynq", "river"}
		for _, b := range o.Grow {
			all = append(all, step{
				name: "callgrind_grow_" + sizeName(b), n: o.NGrow, server: true, callgrind: true, without: others, heavy: true,
				seed: []string{f("scenario", "seed"), f("n", b+o.NGrow)},
				args: []string{f("scenario", "process"), f("n", o.NGrow), f("c", 100), f("stop-at-handled", true)},
			})
		}
		all = append(all, step{
			name: "callgrind_grow_completed_" + sizeName(o.NCompleted), n: o.NGrow, server: true, callgrind: true, without: others, heavy: true,
			pre:  []string{f("scenario", "seed_completed"), f("n", o.NCompleted)},
			seed: []string{f("scenario", "seed"), f("n", o.NGrow)},
			args: []string{f("scenario", "process"), f("n", o.NGrow), f("c", 100)},
		})
	}
	var implFilter, stepFilter []string
	for _, x := range o.Only {
		if slices.Contains(allImpls, x) {
			implFilter = append(implFilter, x)
		} else {
			stepFilter = append(stepFilter, x)
		}
	}
	for _, im := range allImpls {
		if len(implFilter) == 0 || slices.Contains(implFilter, im) {
			impls = append(impls, im)
		}
	}
	for _, st := range all {
		if len(stepFilter) == 0 || slices.ContainsFunc(stepFilter, func(p string) bool { return strings.HasPrefix(st.name, p) }) {
			steps = append(steps, st)
		}
	}
	return impls, steps
}

// sizeName writes 10000 as 10k and 1000000 as 1m.
func sizeName(n int) string {
	switch {
	case n >= 1_000_000 && n%1_000_000 == 0:
		return strconv.Itoa(n/1_000_000) + "m"
	case n >= 1000 && n%1000 == 0:
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}
