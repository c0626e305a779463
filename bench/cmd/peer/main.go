// Command peer runs one benchmark scenario against one Go queue implementation
// (asynq, River or drover) and prints one JSON result line on stdout.
//
// It is started by bench/cmd/compare, once per scenario, run and
// implementation, so that the orchestrator can read the CPU time and peak
// resident memory of this process alone from its rusage. The Node BullMQ peer
// (bench/node/peer.mjs) takes the same flags and prints the same JSON.
//
// Scenarios:
//
//	seed        add -n jobs (bulk where the implementation has it), for a later run
//	add_single  add -n jobs one at a time from -producers concurrent producers
//	add_bulk    add -n jobs in bulk calls of -chunk jobs
//	process     process -n already added no-op jobs at concurrency -c
//	retry       like process, but each job fails until its -attempts-th attempt
//	latency     add -n jobs one at a time (jittered -gap-ms apart) to an idle worker;
//	            latency = processor start - just before the add call
//	delayed     add -n jobs due -lead-ms..-lead-ms+-spread-ms from now;
//	            lateness = processor start - due time
//	mem         process -n already added jobs at concurrency -c, each blocking until all
//	            -n are in flight; reports the resident memory at that moment
//	flow        add -n flows (a parent with -children children) to a worker at -c;
//	            flows per second until every parent ran
//	scheduler   one job scheduler every -every-ms until -n runs; their lateness
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"time"
)

// config is what every implementation and scenario is told.
type config struct {
	Impl        string
	Scenario    string
	N           int
	Concurrency int
	Producers   int
	Chunk       int
	Attempts    int
	RedisAddr   string
	PGURL       string
	PGMaxConns  int
	RiverPoll   time.Duration
	Gap         time.Duration
	Lead        time.Duration
	Spread      time.Duration
	Warmup      time.Duration
	Timeout     time.Duration
	// Workload variants (issue 16): PayloadKB pads every job's data with
	// that many KiB; Backoff "exp" retries with exponential backoff (5 ms
	// base, doubling) and 50 % jitter instead of immediately; Dup > 1 adds
	// every job Dup times under one deduplication id; IDs gives every job a
	// custom id; StopAtHandled ends a
	// process run once -n jobs were handled, leaving the rest of a backlog.
	PayloadKB int
	Backoff   string
	Dup       int
	IDs       bool
	// RemoveOnComplete adds every job with removeOnComplete true, as the
	// harness issue 16 quotes measured with (BullMQ and drover only).
	RemoveOnComplete bool
	StopAtHandled    bool
	// DroverBin is the drover CLI binary (bigqueue).
	DroverBin string
	// Children is each flow's number of children (flow); Every is the
	// scheduler's interval (scheduler).
	Children int
	Every    time.Duration
}

// queueName is the queue every implementation uses.
const queueName = "bench"

func main() {
	var cfg config
	flag.StringVar(&cfg.Impl, "impl", "", "asynq, river, drover or floor (process only: the least Redis work per job, see floor.go)")
	flag.StringVar(&cfg.Scenario, "scenario", "", "seed, add_single, add_bulk, process, retry, latency, delayed or mem")
	flag.IntVar(&cfg.N, "n", 5000, "number of jobs")
	flag.IntVar(&cfg.Concurrency, "c", 10, "worker concurrency")
	flag.IntVar(&cfg.Producers, "producers", 8, "concurrent producers (add_single, seed without bulk)")
	flag.IntVar(&cfg.Chunk, "chunk", 1000, "jobs per bulk call (add_bulk, seed)")
	flag.IntVar(&cfg.Attempts, "attempts", 1, "attempts per job; > 1 adds jobs with immediate retries (seed, retry)")
	flag.StringVar(&cfg.RedisAddr, "redis", "127.0.0.1:6379", "redis-server address")
	flag.StringVar(&cfg.PGURL, "pg", "", "PostgreSQL URL (river)")
	flag.IntVar(&cfg.PGMaxConns, "pg-max-conns", 20, "pgxpool MaxConns (river)")
	flag.DurationVar(&cfg.RiverPoll, "river-poll", 10*time.Millisecond, "River FetchPollInterval (FetchCooldown is always its 1ms minimum)")
	gapMS := flag.Float64("gap-ms", 5, "mean gap between adds (latency); each gap is uniform in [0.5, 1.5] x this")
	leadMS := flag.Float64("lead-ms", 500, "delay of the first delayed job (delayed)")
	spreadMS := flag.Float64("spread-ms", 2000, "delays are spread evenly over this window (delayed)")
	warmupMS := flag.Float64("warmup-ms", 1000, "idle time between worker start and the first add (latency, delayed)")
	timeoutS := flag.Float64("timeout-s", 240, "give up after this many seconds")
	flag.IntVar(&cfg.PayloadKB, "payload-kb", 0, "pad every job's data with this many KiB")
	flag.StringVar(&cfg.Backoff, "backoff", "fixed", "retry backoff with -attempts > 1: fixed (0 ms) or exp (5 ms doubling, jitter 0.5)")
	flag.IntVar(&cfg.Dup, "dup", 1, "add every job this many times under one deduplication id")
	flag.BoolVar(&cfg.RemoveOnComplete, "remove-on-complete", false, "add every job with removeOnComplete true (BullMQ and drover)")
	flag.BoolVar(&cfg.IDs, "ids", false, "give every job a custom id (o1, o2, …: BullMQ/drover jobId, asynq TaskID)")
	flag.BoolVar(&cfg.StopAtHandled, "stop-at-handled", false, "process: stop once -n jobs were handled (a backlog stays)")
	flag.StringVar(&cfg.DroverBin, "drover-bin", "", "drover CLI binary (bigqueue)")
	flag.IntVar(&cfg.Children, "children", 100, "children of each flow's parent (flow)")
	everyMS := flag.Float64("every-ms", 100, "the job scheduler's interval (scheduler)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the whole run to this file (go tool pprof)")
	memProfile := flag.String("memprofile", "", "write an allocation profile of the whole run to this file (go tool pprof -sample_index=alloc_space)")
	flag.Parse()
	if *memProfile != "" {
		runtime.MemProfileRate = 4096
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	cfg.Gap = msDuration(*gapMS)
	cfg.Lead = msDuration(*leadMS)
	cfg.Spread = msDuration(*spreadMS)
	cfg.Warmup = msDuration(*warmupMS)
	cfg.Timeout = time.Duration(*timeoutS * float64(time.Second))
	cfg.Every = msDuration(*everyMS)

	res := run(cfg)
	res.Impl, res.Scenario, res.N = cfg.Impl, cfg.Scenario, cfg.N
	if *cpuProfile != "" {
		pprof.StopCPUProfile()
	}
	if *memProfile != "" {
		if err := writeHeapProfile(*memProfile); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
	}
	out, _ := json.Marshal(res)
	fmt.Println(string(out))
	if res.Error != "" {
		os.Exit(1)
	}
}

// writeHeapProfile writes the allocation profile (every allocation since the
// start, sampled one per 4 KiB) to path.
func writeHeapProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

func run(cfg config) (res result) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	im, err := newImpl(cfg)
	if err != nil {
		return result{Error: err.Error()}
	}
	defer im.Close()
	switch cfg.Scenario {
	case "seed":
		res, err = scenarioSeed(ctx, cfg, im)
	case "add_single":
		res, err = scenarioAddSingle(ctx, cfg, im)
	case "add_bulk":
		res, err = scenarioAddBulk(ctx, cfg, im)
	case "process", "retry":
		res, err = scenarioProcess(ctx, cfg, im)
	case "latency":
		res, err = scenarioLatency(ctx, cfg, im)
	case "delayed":
		res, err = scenarioDelayed(ctx, cfg, im)
	case "mem":
		res, err = scenarioMem(ctx, cfg, im)
	case "seed_completed":
		res, err = scenarioSeedCompleted(ctx, cfg, im)
	case "bigqueue":
		res, err = scenarioBigQueue(ctx, cfg, im)
	case "flow":
		res, err = scenarioFlow(ctx, cfg, im)
	case "scheduler":
		res, err = scenarioScheduler(ctx, cfg, im)
	default:
		err = fmt.Errorf("unknown -scenario %q", cfg.Scenario)
	}
	if err != nil {
		res.Error = err.Error()
	}
	return res
}

func newImpl(cfg config) (impl, error) {
	switch cfg.Impl {
	case "asynq":
		return newAsynq(cfg)
	case "river":
		return newRiver(cfg)
	case "drover":
		return newDrover(cfg)
	case "floor":
		return newFloor(cfg)
	case "floor-format":
		return newFloorFormat(cfg)
	}
	return nil, fmt.Errorf("unknown -impl %q (want asynq, river, drover or floor)", cfg.Impl)
}

// impl is one queue implementation under test. A worker is constructed with
// the -c concurrency given in config; Start starts it with handler h.
type impl interface {
	// Add adds one job.
	Add(ctx context.Context, j jobSpec) error
	// AddBulk adds jobs with the implementation's bulk API, or returns
	// errNoBulk when it has none.
	AddBulk(ctx context.Context, js []jobSpec) error
	// Start starts one worker process' worth of processing at the configured
	// concurrency; h is called for every job.
	Start(ctx context.Context, h handler) error
	// Stop stops the worker, waiting for running handlers.
	Stop(ctx context.Context) error
	// Drained reports whether all n jobs are finished in the backend (not only
	// handled: the completion is written).
	Drained(ctx context.Context, n int) (bool, error)
	Close()
}

// jobSpec is one job to add. Every implementation stores {"i":I} (plus
// "at" for delayed jobs) as the job's data.
type jobSpec struct {
	I        int
	At       int64         // due time, Unix microseconds; 0 = now
	Delay    time.Duration // delay from now (for APIs that take a relative delay)
	Attempts int           // > 1: retry up to this many attempts
	Backoff  string        // with Attempts > 1: "fixed" (0 ms) or "exp" (5 ms doubling, jitter 0.5)
	DedupID  string        // non-empty: deduplicate adds by this id
	JobID    string        // non-empty: the job's custom id
	Pad      string        // extra data (the payload's "p")
	Remove   bool          // removeOnComplete: true (drover: Retention{Remove: true})
}

// spec is job i of a scenario under cfg's workload flags.
func (cfg config) spec(i int) jobSpec {
	j := jobSpec{I: i, Attempts: cfg.Attempts, Backoff: cfg.Backoff, Remove: cfg.RemoveOnComplete}
	if cfg.Dup > 1 {
		j.I = i / cfg.Dup
		j.DedupID = "d" + strconv.Itoa(j.I)
	}
	if cfg.IDs {
		j.JobID = "o" + strconv.Itoa(i)
	}
	if cfg.PayloadKB > 0 {
		j.Pad = padding(cfg.PayloadKB)
	}
	return j
}

// padCache holds the padding of each size; the producers of add_single
// ask for it concurrently.
var padCache sync.Map // kb -> string

func padding(kb int) string {
	if s, ok := padCache.Load(kb); ok {
		return s.(string)
	}
	s, _ := padCache.LoadOrStore(kb, strings.Repeat("x", kb*1024))
	return s.(string)
}

// payload is the job data every implementation carries.
type payload struct {
	I  int    `json:"i"`
	At int64  `json:"at,omitempty"`
	P  string `json:"p,omitempty"`
}

// Exponential backoff of the "exp" workload: attempt k (1-based) failed ->
// wait expBase·2^(k-1), drawn from [d·(1-expJitter), d).
const (
	expBase   = 5 * time.Millisecond
	expJitter = 0.5
)

func expDelay(failed int) time.Duration {
	d := expBase << max(failed-1, 0)
	return d - time.Duration(rand.Float64()*expJitter*float64(d))
}

// handler processes one job; attempt is 1 for the first attempt.
type handler func(ctx context.Context, p payload, attempt int) error

var (
	errNoBulk      = errors.New("no bulk add API")
	errPlannedFail = errors.New("planned failure")
)

// result is the JSON line a peer prints.
type result struct {
	Impl     string  `json:"impl"`
	Scenario string  `json:"scenario"`
	N        int     `json:"n"`
	Seconds  float64 `json:"seconds"`
	Rate     float64 `json:"rate,omitempty"` // jobs per second
	P50ms    float64 `json:"p50_ms,omitempty"`
	P99ms    float64 `json:"p99_ms,omitempty"`
	MaxMs    float64 `json:"max_ms,omitempty"`
	// FirstMs is worker start -> first job handled (process, retry).
	FirstMs float64 `json:"first_ms,omitempty"`
	// Extra holds named figures of scenarios that measure several things
	// (bigqueue: one latency per endpoint).
	Extra map[string]float64 `json:"extra,omitempty"`
	// CPUus is this process' user+sys CPU time over the measured phase only
	// (start-up and module loading excluded).
	CPUus float64 `json:"cpu_us"`
	// RSSkb is the resident set size sampled at the interesting moment (all
	// jobs in flight for mem, the end of the measured phase otherwise).
	RSSkb    int64  `json:"rss_kb"`
	Inflight int    `json:"inflight,omitempty"`
	Note     string `json:"note,omitempty"`
	Error    string `json:"error,omitempty"`
}
