package bullmqoracle

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"testing"
	"time"
)

// Options configures an Oracle. A nil *Options means defaults.
type Options struct {
	// SkipMetasUpdate makes the oracle's Queue objects skip the meta write
	// (version, opts.maxLenEvents) BullMQ's Queue constructor does, so that
	// reading a queue through the oracle leaves its Redis state untouched.
	//
	// Defaults to false: queues behave exactly as a Node user's would.
	SkipMetasUpdate bool

	// Cluster makes the driver treat redisAddr as a seed node of a Redis
	// Cluster: every connection is an ioredis Cluster client. Queue names
	// or prefixes must then carry a {hash tag}, as BullMQ requires.
	//
	// Defaults to false: a single-node ioredis connection.
	Cluster bool

	// Env adds variables to the Node process's environment (KEY=value),
	// such as TZ, the local time zone cron-parser takes when a job
	// scheduler names none.
	Env []string

	// StartTimeout bounds how long Start waits for the Node process to
	// report ready.
	//
	// Defaults to StartTimeoutDefault.
	StartTimeout time.Duration
}

// StartTimeoutDefault is the default Options.StartTimeout. Node starts in
// about a second; at load 20+ on two cores a worker process took more
// than 30 s to say ready.
const StartTimeoutDefault = 60 * time.Second

// CallTimeoutDefault bounds a call whose context has no deadline, so a wedged
// Node process fails the test instead of hanging it.
const CallTimeoutDefault = 60 * time.Second

// Oracle is a running `node driver.mjs` process that performs BullMQ
// operations on request. It is safe for concurrent use.
type Oracle struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stderr *tailBuffer

	writeMu sync.Mutex

	mu      sync.Mutex
	nextID  int64
	pending map[int64]chan response
	readErr error

	ready  chan struct{}
	exited chan struct{} // closed when the stdout reader saw EOF and the process was reaped
}

type response struct {
	ID        *int64          `json:"id"`
	OK        bool            `json:"ok"`
	Result    json.RawMessage `json:"result"`
	Error     string          `json:"error"`
	ErrorName string          `json:"errorName"`
}

// NodeError is an error thrown by BullMQ (or by the driver) while serving a
// call. Message is Node's err.message, unchanged.
type NodeError struct {
	Cmd     string
	Message string
	Name    string // err.name, e.g. "Error", "UnrecoverableError"
}

func (e *NodeError) Error() string {
	return fmt.Sprintf("bullmq oracle %s: %s", e.Cmd, e.Message)
}

// Start spawns `node driver.mjs --redis redisAddr` with default options. See
// StartWithOptions.
func Start(tb testing.TB, redisAddr string) *Oracle {
	tb.Helper()
	return StartWithOptions(tb, redisAddr, nil)
}

// StartWithOptions spawns the driver process, installing the pinned npm
// dependencies first if needed, and waits until it is ready. The process is
// closed when the test ends. Any failure to start fails the test: tests never
// skip because Node is missing.
func StartWithOptions(tb testing.TB, redisAddr string, opts *Options) *Oracle {
	tb.Helper()
	o, err := start(redisAddr, opts)
	if err != nil {
		tb.Fatalf("bullmqoracle: %v", err)
	}
	tb.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		if err := o.Close(ctx); err != nil {
			tb.Errorf("bullmqoracle: close: %v", err)
		}
		if tb.Failed() {
			tb.Logf("bullmqoracle: driver stderr (tail):\n%s", o.stderr.String())
		}
	})
	return o
}

func start(redisAddr string, opts *Options) (*Oracle, error) {
	if opts == nil {
		opts = &Options{}
	}
	startTimeout := opts.StartTimeout
	if startTimeout <= 0 {
		startTimeout = StartTimeoutDefault
	}
	dir, err := nodeDir()
	if err != nil {
		return nil, err
	}
	args := []string{"driver.mjs", "--redis", redisAddr}
	if opts.SkipMetasUpdate {
		args = append(args, "--skip-metas-update")
	}
	if opts.Cluster {
		args = append(args, "--cluster")
	}
	cmd := exec.Command("node", args...)
	cmd.Dir = dir
	if len(opts.Env) > 0 {
		cmd.Env = append(os.Environ(), opts.Env...)
	}
	o := &Oracle{
		cmd:     cmd,
		stderr:  newTailBuffer(64 << 10),
		pending: make(map[int64]chan response),
		ready:   make(chan struct{}),
		exited:  make(chan struct{}),
	}
	cmd.Stderr = o.stderr
	if o.stdin, err = cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("driver stdin: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("driver stdout: %w", err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start node driver.mjs in %s: %w", dir, err)
	}
	go o.readLoop(stdout)

	timer := time.NewTimer(startTimeout)
	defer timer.Stop()
	select {
	case <-o.ready:
		return o, nil
	case <-o.exited:
		return nil, fmt.Errorf("node driver.mjs exited before ready: %w", o.exitErr())
	case <-timer.C:
		_ = cmd.Process.Kill()
		<-o.exited
		return nil, fmt.Errorf("node driver.mjs not ready after %s; stderr:\n%s", startTimeout, o.stderr.String())
	}
}

func (o *Oracle) readLoop(stdout io.Reader) {
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64<<10), 256<<20)
	var readyOnce sync.Once
	var protoErr error
	for sc.Scan() {
		var r response
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil || r.ID == nil {
			protoErr = fmt.Errorf("bad line from driver: %q", truncate(sc.Text(), 500))
			continue
		}
		if *r.ID == 0 {
			readyOnce.Do(func() { close(o.ready) })
			continue
		}
		o.mu.Lock()
		ch, ok := o.pending[*r.ID]
		delete(o.pending, *r.ID)
		o.mu.Unlock()
		if ok {
			ch <- r
		}
	}
	waitErr := o.cmd.Wait()
	o.mu.Lock()
	o.readErr = fmt.Errorf("node driver exited (%w, scan: %w, protocol: %w); stderr:\n%s",
		waitErr, sc.Err(), protoErr, o.stderr.String())
	o.pending = map[int64]chan response{}
	o.mu.Unlock()
	close(o.exited)
}

func (o *Oracle) exitErr() error {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.readErr
}

// Call sends one raw command to the driver and decodes its result into out
// (which may be nil). Typed methods cover every command; Call is for
// commands or arguments they do not expose. A context without a deadline
// gets CallTimeoutDefault.
func (o *Oracle) Call(ctx context.Context, cmd string, args map[string]any, out any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, CallTimeoutDefault)
		defer cancel()
	}
	req := make(map[string]any, len(args)+2)
	for k, v := range args {
		req[k] = v
	}
	ch := make(chan response, 1)
	o.mu.Lock()
	if o.readErr != nil {
		err := o.readErr
		o.mu.Unlock()
		return fmt.Errorf("bullmq oracle %s: %w", cmd, err)
	}
	o.nextID++
	id := o.nextID
	o.pending[id] = ch
	o.mu.Unlock()
	req["id"] = id
	req["cmd"] = cmd
	line, err := json.Marshal(req)
	if err != nil {
		o.forget(id)
		return fmt.Errorf("bullmq oracle %s: encode request: %w", cmd, err)
	}
	line = append(line, '\n')
	o.writeMu.Lock()
	_, err = o.stdin.Write(line)
	o.writeMu.Unlock()
	if err != nil {
		o.forget(id)
		return fmt.Errorf("bullmq oracle %s: write request: %w", cmd, err)
	}
	select {
	case r := <-ch:
		if !r.OK {
			return &NodeError{Cmd: cmd, Message: r.Error, Name: r.ErrorName}
		}
		if out != nil {
			if err := json.Unmarshal(r.Result, out); err != nil {
				return fmt.Errorf("bullmq oracle %s: decode result %s: %w", cmd, truncate(string(r.Result), 300), err)
			}
		}
		return nil
	case <-o.exited:
		return fmt.Errorf("bullmq oracle %s: %w", cmd, o.exitErr())
	case <-ctx.Done():
		o.forget(id)
		return fmt.Errorf("bullmq oracle %s: %w", cmd, context.Cause(ctx))
	}
}

func (o *Oracle) forget(id int64) {
	o.mu.Lock()
	delete(o.pending, id)
	o.mu.Unlock()
}

// Close closes every Worker, QueueEvents and Queue in the driver, ends the
// process and waits for it. It is idempotent; when ctx ends first the
// process is killed.
func (o *Oracle) Close(ctx context.Context) error {
	select {
	case <-o.exited:
		return nil
	default:
	}
	closeErr := o.Call(ctx, "closeAll", nil, nil)
	o.writeMu.Lock()
	_ = o.stdin.Close()
	o.writeMu.Unlock()
	select {
	case <-o.exited:
	case <-ctx.Done():
		_ = o.cmd.Process.Kill()
		<-o.exited
		return fmt.Errorf("node driver did not exit: %w", context.Cause(ctx))
	}
	return closeErr
}

// qargs builds the argument map of a queue command: prefix, queue and the
// given key/value pairs.
func qargs(prefix, queue string, kv ...any) map[string]any {
	m := map[string]any{"prefix": prefix, "queue": queue}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i].(string)] = kv[i+1]
	}
	return m
}

// NodeJob is Node's view of a job: the fields of the Job object that
// Queue.getJob returns, as JSON.
type NodeJob struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Data json.RawMessage `json:"data"`
	// Opts are the options as Node decodes them (stored short keys such as
	// "de" or "kl" mapped back to their public names).
	Opts            map[string]any  `json:"opts"`
	Timestamp       int64           `json:"timestamp"`
	Delay           int64           `json:"delay"`
	Priority        int64           `json:"priority"`
	AttemptsMade    int64           `json:"attemptsMade"`
	AttemptsStarted int64           `json:"attemptsStarted"`
	StalledCounter  int64           `json:"stalledCounter"`
	ProcessedOn     *int64          `json:"processedOn,omitempty"`
	FinishedOn      *int64          `json:"finishedOn,omitempty"`
	ReturnValue     json.RawMessage `json:"returnvalue,omitempty"`
	FailedReason    string          `json:"failedReason,omitempty"`
	Stacktrace      []string        `json:"stacktrace,omitempty"`
	Progress        json.RawMessage `json:"progress,omitempty"`
	ProcessedBy     string          `json:"processedBy,omitempty"`
	DeduplicationID string          `json:"deduplicationId,omitempty"`
	ParentKey       string          `json:"parentKey,omitempty"`
	Parent          map[string]any  `json:"parent,omitempty"`
	RepeatJobKey    string          `json:"repeatJobKey,omitempty"`
	DeferredFailure string          `json:"deferredFailure,omitempty"`
	// NonFinite names numeric fields Node parsed to NaN or ±Infinity (sent
	// as 0 here), e.g. "timestamp" when the hash field is missing.
	NonFinite []string `json:"nonFinite,omitempty"`
}

// BulkJob is one job of AddBulk.
type BulkJob struct {
	Name string         `json:"name"`
	Data any            `json:"data"`
	Opts map[string]any `json:"opts,omitempty"`
}

// Add adds a job with Queue.add and returns its id.
func (o *Oracle) Add(ctx context.Context, prefix, queue, name string, data any, opts map[string]any) (string, error) {
	var id string
	err := o.Call(ctx, "add", qargs(prefix, queue, "name", name, "data", data, "opts", opts), &id)
	return id, err
}

// AddBulk adds jobs with Queue.addBulk and returns their ids in order.
func (o *Oracle) AddBulk(ctx context.Context, prefix, queue string, jobs []BulkJob) ([]string, error) {
	var ids []string
	err := o.Call(ctx, "addBulk", qargs(prefix, queue, "jobs", jobs), &ids)
	return ids, err
}

// GetJob returns Node's view of a job, or nil when Queue.getJob finds none.
func (o *Oracle) GetJob(ctx context.Context, prefix, queue, id string) (*NodeJob, error) {
	var job *NodeJob
	err := o.Call(ctx, "getJob", qargs(prefix, queue, "jobId", id), &job)
	return job, err
}

// GetJobJSON returns a job as BullMQ's own JSON has it, JSON.stringify of
// the Job that Queue.getJob returns, by top-level key; nil when there is
// no job.
func (o *Oracle) GetJobJSON(ctx context.Context, prefix, queue, id string) (map[string]json.RawMessage, error) {
	var job map[string]json.RawMessage
	err := o.Call(ctx, "getJobJSON", qargs(prefix, queue, "jobId", id), &job)
	return job, err
}

// GetState returns Queue.getJobState: "completed", "failed", "delayed",
// "prioritized", "active", "waiting", "waiting-children" or "unknown".
func (o *Oracle) GetState(ctx context.Context, prefix, queue, id string) (string, error) {
	var s string
	err := o.Call(ctx, "getState", qargs(prefix, queue, "jobId", id), &s)
	return s, err
}

// GetJobCounts returns Queue.getJobCounts(types...); with no types, Node's
// default set (active, completed, delayed, failed, prioritized, waiting,
// waiting-children).
func (o *Oracle) GetJobCounts(ctx context.Context, prefix, queue string, types ...string) (map[string]int64, error) {
	var counts map[string]int64
	err := o.Call(ctx, "getJobCounts", qargs(prefix, queue, "types", nonNil(types)), &counts)
	return counts, err
}

// GetJobs returns the ids of Queue.getJobs(types, start, end, asc), which
// skips ids whose job hash is missing.
func (o *Oracle) GetJobs(ctx context.Context, prefix, queue string, types []string, start, end int, asc bool) ([]string, error) {
	var ids []string
	err := o.Call(ctx, "getJobs", qargs(prefix, queue, "types", nonNil(types), "start", start, "end", end, "asc", asc), &ids)
	return ids, err
}

// GetRanges returns Queue.getRanges(types, start, end, asc): the raw ids.
func (o *Oracle) GetRanges(ctx context.Context, prefix, queue string, types []string, start, end int, asc bool) ([]string, error) {
	var ids []string
	err := o.Call(ctx, "getRanges", qargs(prefix, queue, "types", nonNil(types), "start", start, "end", end, "asc", asc), &ids)
	return ids, err
}

// GetMeta returns Queue.getMeta().
func (o *Oracle) GetMeta(ctx context.Context, prefix, queue string) (map[string]any, error) {
	var meta map[string]any
	err := o.Call(ctx, "getMeta", qargs(prefix, queue), &meta)
	return meta, err
}

// GetWorkers returns Queue.getWorkers(): one CLIENT LIST entry per worker
// connection, its fields as strings ("rawname" is the connection's name,
// "name" the queue's).
func (o *Oracle) GetWorkers(ctx context.Context, prefix, queue string) ([]map[string]string, error) {
	var ws []map[string]string
	err := o.Call(ctx, "getWorkers", qargs(prefix, queue), &ws)
	return ws, err
}

// GetWorkersCount returns Queue.getWorkersCount().
func (o *Oracle) GetWorkersCount(ctx context.Context, prefix, queue string) (int, error) {
	var n int
	err := o.Call(ctx, "getWorkersCount", qargs(prefix, queue), &n)
	return n, err
}

// Pause calls Queue.pause.
func (o *Oracle) Pause(ctx context.Context, prefix, queue string) error {
	return o.Call(ctx, "pause", qargs(prefix, queue), nil)
}

// Resume calls Queue.resume.
func (o *Oracle) Resume(ctx context.Context, prefix, queue string) error {
	return o.Call(ctx, "resume", qargs(prefix, queue), nil)
}

// IsPaused returns Queue.isPaused.
func (o *Oracle) IsPaused(ctx context.Context, prefix, queue string) (bool, error) {
	var p bool
	err := o.Call(ctx, "isPaused", qargs(prefix, queue), &p)
	return p, err
}

// Drain calls Queue.drain(delayed).
func (o *Oracle) Drain(ctx context.Context, prefix, queue string, delayed bool) error {
	return o.Call(ctx, "drain", qargs(prefix, queue, "delayed", delayed), nil)
}

// Obliterate calls Queue.obliterate({force}).
func (o *Oracle) Obliterate(ctx context.Context, prefix, queue string, force bool) error {
	return o.ObliterateCount(ctx, prefix, queue, force, 0)
}

// ObliterateCount is Obliterate deleting count jobs per script call (its
// count option; 0: BullMQ's default 1000).
func (o *Oracle) ObliterateCount(ctx context.Context, prefix, queue string, force bool, count int) error {
	return o.Call(ctx, "obliterate", qargs(prefix, queue, "force", force, "count", count), nil)
}

// Promote calls Job.promote on a delayed job.
func (o *Oracle) Promote(ctx context.Context, prefix, queue, id string) error {
	return o.Call(ctx, "promote", qargs(prefix, queue, "jobId", id), nil)
}

// RetryJob calls Job.retry(state, {resetAttemptsMade, resetAttemptsStarted})
// on a finished job; state is "failed" or "completed".
func (o *Oracle) RetryJob(ctx context.Context, prefix, queue, id, state string, resetAttemptsMade, resetAttemptsStarted bool) error {
	return o.Call(ctx, "retryJob", qargs(prefix, queue, "jobId", id, "state", state,
		"resetAttemptsMade", resetAttemptsMade, "resetAttemptsStarted", resetAttemptsStarted), nil)
}

// RetryJobsOptions are the options of Queue.retryJobs; zero fields are left
// to Node's defaults (state "failed", count 1000, timestamp now).
type RetryJobsOptions struct {
	State     string `json:"state,omitempty"`
	Count     int    `json:"count,omitempty"`
	Timestamp int64  `json:"timestamp,omitempty"`
}

// RetryJobs calls Queue.retryJobs.
func (o *Oracle) RetryJobs(ctx context.Context, prefix, queue string, opts RetryJobsOptions) error {
	args := qargs(prefix, queue)
	if opts.State != "" {
		args["state"] = opts.State
	}
	if opts.Count > 0 {
		args["count"] = opts.Count
	}
	if opts.Timestamp > 0 {
		args["timestamp"] = opts.Timestamp
	}
	return o.Call(ctx, "retryJobs", args, nil)
}

// PromoteJobs calls Queue.promoteJobs({count}); count 0 means Node's default.
func (o *Oracle) PromoteJobs(ctx context.Context, prefix, queue string, count int) error {
	return o.Call(ctx, "promoteJobs", qargs(prefix, queue, "count", count), nil)
}

// Remove calls Queue.remove(id) and returns its code: 1 removed, 0 locked
// (or nothing removed). A scheduler's current iteration comes back as a
// NodeError.
func (o *Oracle) Remove(ctx context.Context, prefix, queue, id string) (int, error) {
	var code int
	err := o.Call(ctx, "remove", qargs(prefix, queue, "jobId", id), &code)
	return code, err
}

// RemoveKeepChildren is Remove with {removeChildren: false}: the job's
// flow children stay, their parent gone.
func (o *Oracle) RemoveKeepChildren(ctx context.Context, prefix, queue, id string) (int, error) {
	var code int
	err := o.Call(ctx, "remove", qargs(prefix, queue, "jobId", id, "removeChildren", false), &code)
	return code, err
}

// ChangePriority calls Job.changePriority({priority, lifo}).
func (o *Oracle) ChangePriority(ctx context.Context, prefix, queue, id string, priority int, lifo bool) error {
	return o.Call(ctx, "changePriority", qargs(prefix, queue, "jobId", id, "priority", priority, "lifo", lifo), nil)
}

// ChangeDelay calls Job.changeDelay(delay ms) on a delayed job.
func (o *Oracle) ChangeDelay(ctx context.Context, prefix, queue, id string, delay int64) error {
	return o.Call(ctx, "changeDelay", qargs(prefix, queue, "jobId", id, "delay", delay), nil)
}

// Clean calls Queue.clean(grace ms, limit, type) and returns the removed ids.
// limit 0 means no limit.
func (o *Oracle) Clean(ctx context.Context, prefix, queue string, grace int64, limit int, typ string) ([]string, error) {
	var ids []string
	err := o.Call(ctx, "clean", qargs(prefix, queue, "grace", grace, "limit", limit, "type", typ), &ids)
	return ids, err
}

// UpdateProgress calls Queue.updateJobProgress(id, value).
func (o *Oracle) UpdateProgress(ctx context.Context, prefix, queue, id string, value any) error {
	return o.Call(ctx, "updateProgress", qargs(prefix, queue, "jobId", id, "value", value), nil)
}

// UpdateData calls Job.updateData(value) on the job read with Job.fromId.
func (o *Oracle) UpdateData(ctx context.Context, prefix, queue, id string, value any) error {
	return o.Call(ctx, "updateData", qargs(prefix, queue, "jobId", id, "value", value), nil)
}

// Log calls Job.log(line) (which honours the job's keepLogs) and returns
// the resulting number of log lines.
func (o *Oracle) Log(ctx context.Context, prefix, queue, id, line string) (int64, error) {
	var n int64
	err := o.Call(ctx, "log", qargs(prefix, queue, "jobId", id, "line", line), &n)
	return n, err
}

// GetJobLogs returns Queue.getJobLogs(id): the lines, oldest first, and the
// total count.
func (o *Oracle) GetJobLogs(ctx context.Context, prefix, queue, id string) ([]string, int64, error) {
	var r struct {
		Logs  []string `json:"logs"`
		Count int64    `json:"count"`
	}
	err := o.Call(ctx, "getJobLogs", qargs(prefix, queue, "jobId", id), &r)
	return r.Logs, r.Count, err
}

// GetJobLogsRange returns Queue.getJobLogs(id, start, end, asc): the lines
// and the total count.
func (o *Oracle) GetJobLogsRange(ctx context.Context, prefix, queue, id string, start, end int, asc bool) ([]string, int64, error) {
	var r struct {
		Logs  []string `json:"logs"`
		Count int64    `json:"count"`
	}
	err := o.Call(ctx, "getJobLogs", qargs(prefix, queue, "jobId", id, "start", start, "end", end, "asc", asc), &r)
	return r.Logs, r.Count, err
}

// FinishResult is how a job finished, as Job.waitUntilFinished saw it.
type FinishResult struct {
	State        string          `json:"state"` // "completed" or "failed"
	ReturnValue  json.RawMessage `json:"returnvalue,omitempty"`
	FailedReason string          `json:"failedReason,omitempty"`
}

// WaitUntilFinished calls Job.waitUntilFinished with the queue's QueueEvents
// (started on first use) and a Node-side ttl of timeout. A failed job is a
// FinishResult with State "failed", not an error; the ttl expiring is an
// error.
func (o *Oracle) WaitUntilFinished(ctx context.Context, prefix, queue, id string, timeout time.Duration) (*FinishResult, error) {
	var r FinishResult
	err := o.Call(ctx, "waitUntilFinished", qargs(prefix, queue, "jobId", id, "timeoutMs", timeout.Milliseconds()), &r)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// SetGlobalConcurrency calls Queue.setGlobalConcurrency.
func (o *Oracle) SetGlobalConcurrency(ctx context.Context, prefix, queue string, concurrency int) error {
	return o.Call(ctx, "setGlobalConcurrency", qargs(prefix, queue, "concurrency", concurrency), nil)
}

// SetGlobalRateLimit calls Queue.setGlobalRateLimit(max, duration).
func (o *Oracle) SetGlobalRateLimit(ctx context.Context, prefix, queue string, max int, duration time.Duration) error {
	return o.Call(ctx, "setGlobalRateLimit", qargs(prefix, queue, "max", max, "duration", duration.Milliseconds()), nil)
}

// RateLimit calls Queue.rateLimit(ms).
func (o *Oracle) RateLimit(ctx context.Context, prefix, queue string, d time.Duration) error {
	return o.Call(ctx, "rateLimit", qargs(prefix, queue, "ms", d.Milliseconds()), nil)
}

// GetRateLimitTTL calls Queue.getRateLimitTtl(maxJobs), without the
// argument when maxJobs is nil, and returns its answer in ms.
func (o *Oracle) GetRateLimitTTL(ctx context.Context, prefix, queue string, maxJobs *int) (int64, error) {
	args := qargs(prefix, queue)
	if maxJobs != nil {
		args["maxJobs"] = *maxJobs
	}
	var ms int64
	err := o.Call(ctx, "getRateLimitTtl", args, &ms)
	return ms, err
}

// RemoveRateLimitKey calls Queue.removeRateLimitKey and returns the number
// of keys deleted.
func (o *Oracle) RemoveRateLimitKey(ctx context.Context, prefix, queue string) (int64, error) {
	var n int64
	err := o.Call(ctx, "removeRateLimitKey", qargs(prefix, queue), &n)
	return n, err
}

// StartWorker starts a BullMQ Worker inside the driver process, processing
// queue with the scripted opts.Behavior. It returns once the worker is
// connected.
func (o *Oracle) StartWorker(ctx context.Context, prefix, queue string, opts WorkerOptions) error {
	if opts.ID == "" {
		return errors.New("bullmq oracle startWorker: WorkerOptions.ID is required")
	}
	return o.Call(ctx, "startWorker", qargs(prefix, queue, "worker", opts.spec()), nil)
}

// StopWorker calls Worker.close(force). The worker's events stay readable
// and its ID may be started again.
func (o *Oracle) StopWorker(ctx context.Context, workerID string, force bool) error {
	return o.Call(ctx, "stopWorker", map[string]any{"workerId": workerID, "force": force}, nil)
}

// PauseWorker calls the worker's pause(doNotWaitActive) and returns once it
// resolved.
func (o *Oracle) PauseWorker(ctx context.Context, workerID string, doNotWaitActive bool) error {
	return o.Call(ctx, "pauseWorker", map[string]any{"workerId": workerID, "doNotWaitActive": doNotWaitActive}, nil)
}

// ResumeWorker calls the worker's resume().
func (o *Oracle) ResumeWorker(ctx context.Context, workerID string) error {
	return o.Call(ctx, "resumeWorker", map[string]any{"workerId": workerID}, nil)
}

// WorkerStatus is a worker's isPaused() and isRunning().
type WorkerStatus struct {
	Paused  bool `json:"paused"`
	Running bool `json:"running"`
}

// WorkerStatus reads the worker's isPaused() and isRunning().
func (o *Oracle) WorkerStatus(ctx context.Context, workerID string) (WorkerStatus, error) {
	var st WorkerStatus
	err := o.Call(ctx, "workerStatus", map[string]any{"workerId": workerID}, &st)
	return st, err
}

// WorkerEvents returns the local events the worker emitted so far, in order.
func (o *Oracle) WorkerEvents(ctx context.Context, workerID string) ([]WorkerEvent, error) {
	var evs []WorkerEvent
	err := o.Call(ctx, "workerEvents", map[string]any{"workerId": workerID}, &evs)
	return evs, err
}

// WaitWorkerEvents waits until the worker emitted at least count events whose
// Event is one of kinds (any event when kinds is empty), then returns all
// matching events so far. It fails after timeout.
func (o *Oracle) WaitWorkerEvents(ctx context.Context, workerID string, count int, timeout time.Duration, kinds ...string) ([]WorkerEvent, error) {
	var evs []WorkerEvent
	err := o.Call(ctx, "waitWorkerEvents", map[string]any{
		"workerId": workerID, "count": count, "timeoutMs": timeout.Milliseconds(), "events": nonNil(kinds),
	}, &evs)
	return evs, err
}

// QueueEvent is one event a Node QueueEvents emitted: the event name, the
// stream entry id and the fields exactly as QueueEvents passed them to
// listeners (returnvalue and progress data parsed from JSON, delay a number).
type QueueEvent struct {
	Name   string         `json:"name"`
	ID     string         `json:"id"`
	Fields map[string]any `json:"fields"`
}

// JobID returns the event's jobId field, or "".
func (e QueueEvent) JobID() string {
	s, _ := e.Fields["jobId"].(string)
	return s
}

// StartQueueEvents starts a QueueEvents on the queue (once; later calls are
// no-ops). It reads from the newest stream entry that existed when it
// started, so every event written after this call returns is collected.
func (o *Oracle) StartQueueEvents(ctx context.Context, prefix, queue string) error {
	return o.Call(ctx, "startQueueEvents", qargs(prefix, queue), nil)
}

// QueueEvents returns the events collected since StartQueueEvents, in order.
func (o *Oracle) QueueEvents(ctx context.Context, prefix, queue string) ([]QueueEvent, error) {
	var evs []QueueEvent
	err := o.Call(ctx, "queueEvents", qargs(prefix, queue), &evs)
	return evs, err
}

// WaitQueueEvents waits until at least count collected events have one of
// names (any when empty) and returns all matching events so far.
func (o *Oracle) WaitQueueEvents(ctx context.Context, prefix, queue string, count int, timeout time.Duration, names ...string) ([]QueueEvent, error) {
	var evs []QueueEvent
	err := o.Call(ctx, "waitQueueEvents", qargs(prefix, queue, "count", count, "timeoutMs", timeout.Milliseconds(), "names", nonNil(names)), &evs)
	return evs, err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// tailBuffer keeps the last max bytes written to it.
type tailBuffer struct {
	mu  sync.Mutex
	max int
	b   []byte
}

func newTailBuffer(max int) *tailBuffer { return &tailBuffer{max: max} }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > t.max {
		t.b = append([]byte(nil), t.b[len(t.b)-t.max:]...)
	}
	return len(p), nil
}

func (t *tailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.b)
}

// FlowJob is one node of a flow for AddFlow (Node's FlowJob).
type FlowJob struct {
	Name      string `json:"name"`
	QueueName string `json:"queueName"`
	// Prefix is the node's key prefix ("": the FlowProducer's).
	Prefix   string         `json:"prefix,omitempty"`
	Data     any            `json:"data,omitempty"`
	Opts     map[string]any `json:"opts,omitempty"`
	Children []FlowJob      `json:"children,omitempty"`
}

// FlowIDs are the ids a flow got, in the shape of the flow.
type FlowIDs struct {
	ID       string    `json:"id"`
	Children []FlowIDs `json:"children"`
}

// FlowNode is one node of a tree Node's FlowProducer.getFlow read: the
// job's id and queue name, and its children. A nil *FlowNode is getFlow's
// undefined entry: a child its parent lists whose job is missing.
type FlowNode struct {
	ID       string      `json:"id"`
	Queue    string      `json:"queue"`
	Children []*FlowNode `json:"children"`
}

// GetFlow reads the flow under job id of queue with FlowProducer.getFlow
// (depth and maxChildren 0 for BullMQ's defaults). It returns nil when the
// job does not exist.
func (o *Oracle) GetFlow(ctx context.Context, prefix, queue, id string, depth, maxChildren int) (*FlowNode, error) {
	var n *FlowNode
	err := o.Call(ctx, "getFlow", qargs(prefix, queue, "jobId", id, "depth", depth, "maxChildren", maxChildren), &n)
	return n, err
}

// AddFlows adds several flows in one call (FlowProducer.addBulk).
func (o *Oracle) AddFlows(ctx context.Context, prefix string, flows []FlowJob) ([]FlowIDs, error) {
	var ids []FlowIDs
	err := o.Call(ctx, "addFlows", map[string]any{"prefix": prefix, "flows": flows}, &ids)
	return ids, err
}

// AddFlow adds a parent job with its children (FlowProducer.add).
func (o *Oracle) AddFlow(ctx context.Context, prefix string, flow FlowJob) (*FlowIDs, error) {
	return o.AddFlowOpts(ctx, prefix, flow, nil)
}

// AddFlowOpts is AddFlow with FlowProducer.add's options (queuesOptions:
// {"<queue>": {"defaultJobOptions": {...}}}); nil for none.
func (o *Oracle) AddFlowOpts(ctx context.Context, prefix string, flow FlowJob, opts map[string]any) (*FlowIDs, error) {
	var ids FlowIDs
	args := map[string]any{"prefix": prefix, "flow": flow}
	if opts != nil {
		args["opts"] = opts
	}
	if err := o.Call(ctx, "addFlow", args, &ids); err != nil {
		return nil, err
	}
	return &ids, nil
}

// OpenQueue opens the driver's Queue of prefix and queue with
// defaultJobOptions (BullMQ's QueueOptions.defaultJobOptions), which its
// add, addBulk and upsertJobScheduler then merge under each job's own
// options. It must come before any other call on that queue: the driver
// refuses to reopen one.
func (o *Oracle) OpenQueue(ctx context.Context, prefix, queue string, defaultJobOptions map[string]any) error {
	return o.OpenQueueCapped(ctx, prefix, queue, defaultJobOptions, 0)
}

// OpenQueueCapped is OpenQueue with BullMQ's streams.events.maxLen
// QueueOption when eventsMaxLen is not 0: the Queue writes it into meta
// (opts.maxLenEvents) as it starts, and every event a script writes then
// trims the stream to it (XADD MAXLEN ~).
func (o *Oracle) OpenQueueCapped(ctx context.Context, prefix, queue string, defaultJobOptions map[string]any, eventsMaxLen int64) error {
	args := qargs(prefix, queue, "defaultJobOptions", defaultJobOptions)
	if eventsMaxLen != 0 {
		args["eventsMaxLen"] = eventsMaxLen
	}
	return o.Call(ctx, "openQueue", args, nil)
}
