package scripts

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/keys"
)

// AddRecord is one job for AddJobs. Data and Opts are JSON texts.
type AddRecord struct {
	ID         string // "" = next counter value
	Name       string
	Timestamp  int64 // ms
	Data       string
	Opts       string
	Delay      int64 // ms; > 0 puts the job in delayed
	Priority   int
	LIFO       bool
	DedupID    string
	DedupTTL   int64  // ms, 0 = none
	DedupFlags string // "r" replace, "e" extend, "k" keepLastIfActive
}

// AddResult is what addJobs did with one record.
type AddResult uint8

// The addJobs results, by the name the script returns (addResults).
const (
	AddCreated      AddResult = iota + 1 // "created"
	AddDuplicate                         // "duplicate": the custom id exists
	AddDeduplicated                      // "deduplicated": the dedup id is owned
	AddReAdded                           // "readded": created, taking over a removed owner's dedup id
)

var addResults = map[string]AddResult{
	"created": AddCreated, "duplicate": AddDuplicate, "deduplicated": AddDeduplicated, "readded": AddReAdded,
}

// AddOutcome is what happened to one AddRecord.
type AddOutcome struct {
	Result AddResult
	ID     string // the new job's id, or the existing job's
	// State is the existing job's state (AddDuplicate, AddDeduplicated) or
	// the removed owner's id (AddReAdded).
	State string
	// Existing is the existing job's hash as a field/value list, for
	// AddDuplicate and AddDeduplicated when the reply carried it (addJobs
	// does, except when answering a re-run of a call; addFlow does not);
	// empty when that job has no hash.
	Existing []any
}

// hash is the job hash addJobs writes for r, as HGETALL lists it: the
// existing job of a later record of the same call that duplicates it (see
// parseAddReply), so the script need not read back what it just wrote.
func (r *AddRecord) hash() []any {
	h := []any{"name", r.Name, "data", r.Data, "opts", r.Opts,
		"timestamp", strconv.FormatInt(r.Timestamp, 10), "delay", strconv.FormatInt(r.Delay, 10),
		"priority", strconv.Itoa(r.Priority)}
	if r.DedupID != "" {
		h = append(h, "deid", r.DedupID)
	}
	return h
}

const addFields = 11

// Call identifies one script call across the resends of it (an add, a
// cancel, an admin or scheduler write; include/once.lua): the script
// records its reply under Token for TTL, and a re-run of the same call
// (drover's sendAdd resends an add whose reply was lost; go-redis resends
// the other writes itself) returns that reply and writes nothing.
type Call struct {
	Token string        // unique per call; "" = no replay protection
	TTL   time.Duration // how long a re-run is recognised
}

// ttlMs is TTL as the scripts take it: whole milliseconds, at least 1 (a
// SET with PX 0 is refused).
func (c Call) ttlMs() int64 { return max(c.TTL.Milliseconds(), 1) }

// callTokenPrefix makes tokens unique across processes; callSeq within one.
var (
	callTokenPrefix = newTokenPrefix()
	callSeq         atomic.Uint64
)

func newTokenPrefix() string {
	var b [9]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return base64.RawURLEncoding.EncodeToString(b[:]) + "."
}

// NewCall returns a Call with a fresh token, valid for ttl.
func NewCall(ttl time.Duration) Call {
	return Call{Token: callTokenPrefix + strconv.FormatUint(callSeq.Add(1), 36), TTL: ttl}
}

// appendAddArgs appends the ARGV of AddJobs (after the base) for recs to args.
func appendAddArgs(args []any, call Call, recs []AddRecord) []any {
	args = append(args, call.Token, call.ttlMs(), len(recs))
	for i := range recs {
		r := &recs[i]
		lifo := "0"
		if r.LIFO {
			lifo = "1"
		}
		args = append(args, r.ID, r.Name, r.Timestamp, r.Data, r.Opts, r.Delay, r.Priority, lifo,
			r.DedupID, r.DedupTTL, r.DedupFlags)
	}
	return args
}

// plainFields is the number of ARGV fields of one addPlainJobs record.
const plainFields = 4

// plain reports whether r is a plain add, one addPlainJobs takes: no
// custom id, delay, priority, lifo or deduplication id. The dedup ttl and
// flags mean nothing without a dedup id (addJobs reads neither then).
func (r *AddRecord) plain() bool {
	return r.ID == "" && r.Delay == 0 && r.Priority == 0 && !r.LIFO && r.DedupID == ""
}

// AddJobs stores and enqueues recs in one call. Retries of the command by
// the client (after a lost reply) are answered with the first run's reply,
// so the jobs are stored once per call (see Call). A batch of plain
// records only (the common add) goes to addPlainJobs, which writes the same
// and answers what addJobs answers for it, at less Redis work per job; a
// resend of a call goes where its first send went, as its records are the
// same.
func AddJobs(ctx context.Context, rdb Doer, k keys.Queue, call Call, recs []AddRecord) ([]AddOutcome, error) {
	if len(recs) > 0 && allPlain(recs) {
		return addPlain(ctx, rdb, k, call, recs)
	}
	return addGeneral(ctx, rdb, k, call, recs)
}

func allPlain(recs []AddRecord) bool {
	for i := range recs {
		if !recs[i].plain() {
			return false
		}
	}
	return true
}

// addPlain is AddJobs with addPlainJobs, for plain records (see plain).
func addPlain(ctx context.Context, rdb Doer, k keys.Queue, call Call, recs []AddRecord) ([]AddOutcome, error) {
	cmdArgs := addPlainJobs.cmdArgs(k, 2+plainFields*len(recs))
	cmdArgs = append(cmdArgs, call.Token, call.ttlMs())
	for i := range recs {
		r := &recs[i]
		cmdArgs = append(cmdArgs, r.Name, r.Timestamp, r.Data, r.Opts)
	}
	res, err := addPlainJobs.sendOnce(ctx, rdb, cmdArgs).Result()
	if err != nil {
		return nil, err
	}
	if idBase, ok := res.(int64); ok {
		return createdOutcomes(idBase, recs), nil
	}
	return nil, fmt.Errorf("addPlainJobs: malformed reply %v", res)
}

// addGeneral is AddJobs with addJobs, which takes every option.
func addGeneral(ctx context.Context, rdb Doer, k keys.Queue, call Call, recs []AddRecord) ([]AddOutcome, error) {
	args := make([]any, 0, 3+addFields*len(recs))
	args = appendAddArgs(args, call, recs)
	res, err := addJobs.runOnce(ctx, rdb, k, args...).Result()
	if err != nil {
		return nil, err
	}
	switch res := res.(type) {
	case int64:
		return createdOutcomes(res, recs), nil
	case []any:
		return parseAddReply(res, recs)
	}
	return nil, fmt.Errorf("addJobs: malformed reply %v", res)
}

// createdOutcomes is the outcome of every record when addJobs created them
// all and answered with idBase, the id counter's value before the batch:
// the i-th record (from 0) without an id of its own got idBase+i+1.
func createdOutcomes(idBase int64, recs []AddRecord) []AddOutcome {
	out := make([]AddOutcome, len(recs))
	for i, r := range recs {
		id := r.ID
		if id == "" {
			id = LuaNumberText(idBase + int64(i) + 1)
		}
		out[i] = AddOutcome{Result: AddCreated, ID: id}
	}
	return out
}

// LuaNumberText is n as Lua's tostring writes it (C's "%.14g" of the
// number as a double), which is how the add scripts, drover's as BullMQ's
// addStandardJob, make a generated id of the counter's value: the number
// itself below 10^14, 14 significant digits with an exponent from there
// ("1e+14", "9.007199254741e+15"). An id counter that far on gives the
// same id to several jobs, in BullMQ as in drover; the caller is told the
// id the job's hash has.
func LuaNumberText(n int64) string {
	if n > -1e14 && n < 1e14 {
		return strconv.FormatInt(n, 10)
	}
	return strconv.FormatFloat(float64(n), 'g', 14, 64)
}

// parseAddReply reads addJobs' reply of one entry per record. recs are the
// call's records: an entry whose existing job an earlier record of the
// same call created names that record, whose fields are the job's hash.
func parseAddReply(res []any, recs []AddRecord) ([]AddOutcome, error) {
	out := make([]AddOutcome, len(res))
	for i, r := range res {
		t, ok := r.([]any)
		if !ok || len(t) < 3 || len(t) > 4 {
			return nil, fmt.Errorf("addJobs: malformed reply %v", r)
		}
		res, ok := addResults[str(t[0])]
		if !ok {
			return nil, fmt.Errorf("addJobs: unknown result %q", str(t[0]))
		}
		out[i] = AddOutcome{Result: res, ID: str(t[1]), State: str(t[2])}
		if len(t) == 4 {
			if k, ok := t[3].(int64); ok && k >= 0 && int(k) < i && int(k) < len(recs) {
				out[i].Existing = recs[k].hash()
				continue
			}
			h, ok := t[3].([]any)
			if !ok || len(h)%2 != 0 {
				return nil, fmt.Errorf("addJobs: malformed existing job %v", t[3])
			}
			out[i].Existing = h
		}
	}
	return out, nil
}

// Load makes sure every script is in the server's script cache, so pipelines
// can use EVALSHA alone.
func Load(ctx context.Context, rdb redis.Scripter) error {
	for _, s := range All() {
		if err := s.Load(ctx, rdb).Err(); err != nil {
			return err
		}
	}
	return nil
}

// Fetched is one job moved to active: its id and its hash as a flat
// field/value list, read before activation (see moveToActive.lua).
type Fetched struct {
	ID   string
	Hash []any
	// ProcessedOn is the processedOn (ms) the take wrote, which Hash,
	// read before it, does not hold; 0 when Hash was read after the take
	// (SettleCall) and holds it.
	ProcessedOn int64
}

// Fetch is the result of moving jobs to active.
type Fetch struct {
	Jobs []Fetched
	// NextDelayed is the raw score of the earliest delayed job when fewer
	// jobs were fetched than asked for, none included ("" when there is no
	// delayed job, or the take was full): due ms = keys.DueOfScore(score).
	NextDelayed string
	// RateLimitTTL (ms) > 0 says the queue's rate limiter refused to
	// activate jobs for that long.
	RateLimitTTL int64
}

// parseFetch reads a take's reply; at is the processedOn the take wrote (its
// FetchArgs.Now), 0 when the hashes were read after it.
func parseFetch(next any, jobs any, ttl any, at int64) (Fetch, error) {
	f := Fetch{NextDelayed: str(next), RateLimitTTL: toInt(ttl)}
	list, _ := jobs.([]any)
	if len(list)%2 != 0 {
		return f, fmt.Errorf("fetch: odd job list length %d", len(list))
	}
	f.Jobs = make([]Fetched, 0, len(list)/2)
	for i := 0; i < len(list); i += 2 {
		h, _ := list[i+1].([]any)
		f.Jobs = append(f.Jobs, Fetched{ID: str(list[i]), Hash: h, ProcessedOn: at})
	}
	return f, nil
}

// FetchArgs are the parameters of taking jobs.
type FetchArgs struct {
	Now          int64
	Count        int
	Token        string // unique per call; each job's lock is Token + ":" + job id
	LockDuration int64  // ms
	WorkerName   string
	LimitMax     int   // worker rate limit: jobs per window (0 = none)
	LimitWindow  int64 // ms
	// ExactLock, for FinishJobs only, is a manual finish's fetch-next: the
	// one job fetched (Count 1) is locked with this value itself, the lock
	// the caller chose, and only when the finish was done. "" for none.
	ExactLock string
}

// promoteMax is the highest delayed-set score due at a.Now: the fetch
// promotes every delayed job up to it (computed here, since a Lua number
// handed to redis.call costs a printf).
func (a FetchArgs) promoteMax() int64 { return keys.DelayedScore(a.Now+1, 0) - 1 }

// MoveToActive takes up to a.Count ready jobs. The call is sent once (no
// client resend, see sentOnce): when its reply is lost, SettleCall says
// which jobs it took.
func MoveToActive(ctx context.Context, rdb Doer, k keys.Queue, a FetchArgs) (Fetch, error) {
	res, err := moveToActive.runOnce(ctx, rdb, k, a.Now, a.Count, a.Token,
		a.LockDuration, a.WorkerName, a.LimitMax, a.LimitWindow, a.promoteMax()).Slice()
	if err != nil {
		return Fetch{}, err
	}
	if len(res) != 3 {
		return Fetch{}, fmt.Errorf("moveToActive: malformed reply %v", res)
	}
	return parseFetch(res[0], res[1], res[2], a.Now)
}

// TakeJob moves one ready job to active locked with a.Token itself (not
// a.Token + ":" + id), the lock value the caller chose, as BullMQ's
// getNextJob does; a.Count is ignored. Sent once, like MoveToActive: when
// its reply is lost, SettleCall with call (a token of this call's own) and
// Exact a.Token, At a.Now says which job it took.
func TakeJob(ctx context.Context, rdb Doer, k keys.Queue, a FetchArgs, call string) (Fetch, error) {
	res, err := moveToActive.runOnce(ctx, rdb, k, a.Now, 1, a.Token,
		a.LockDuration, a.WorkerName, a.LimitMax, a.LimitWindow, a.promoteMax(), "1", call).Slice()
	if err != nil {
		return Fetch{}, err
	}
	if len(res) != 3 {
		return Fetch{}, fmt.Errorf("moveToActive: malformed reply %v", res)
	}
	return parseFetch(res[0], res[1], res[2], a.Now)
}

// Finish kinds (see finishJobs.lua).
const (
	FinishCompleted    = "c"
	FinishFailed       = "f"
	FinishRetry        = "r"
	FinishRetryDelayed = "d"
	FinishRequeue      = "w"
	FinishMoveDelayed  = "m"
)

// RequeueShutdown is the Value of a FinishRequeue record whose job a
// closing worker hands back: the script wakes a worker for it even when it
// goes back to prioritized, as the stalled checker's recovery would have.
// Other move-backs (the rate limiter's, Job.MoveToWait) leave Value empty
// and write no marker for a prioritized job, as BullMQ's
// moveJobFromActiveToWait.
const RequeueShutdown = "shutdown"

// FinishRecord ends one job's attempt.
type FinishRecord struct {
	ID           string
	Token        string
	Kind         string
	Value        string // returnvalue JSON or failedReason
	Stacktrace   string // JSON array, "" = unchanged
	AttemptsMade int    // value after this attempt
	Keep         string // retention spec, see retention.lua
	Delay        int64  // ms for FinishRetryDelayed / FinishMoveDelayed
	LIFO         bool
	Attempts     int
	Timeline     string // JSON, "" = unchanged
	DedupID      string // the deduplication id the job owns, "" = none
	HasParent    bool   // the job is a flow child: update its parent
	// MayBeAdopted: the job has no parent yet, but a flow may name it as a
	// child while it runs (a custom id, see BullMQ's
	// updateExistingJobsParent): the script looks for a parent when it
	// finishes. A plain completion then keeps its short record, marked
	// "p", and costs one HEXISTS.
	MayBeAdopted bool
	Due          int64 // ms, when a FinishRetryDelayed/FinishMoveDelayed job is due
	// Telemetry is the trace context of the failure, written to the job
	// hash field "tm" (a failed, retried or delayed-retry record only; ""
	// = none), as BullMQ's telemetry writes it on moveToFailed.
	Telemetry string
}

// finishRecord is the schema of finishJobs' per-job record: its fields in
// ARGV order, each with the value Go sends. finishJobs.lua reads them
// through the REC table generated from these names (records, --@record).
// A record is its head (the fields up to and including "more") and, when
// more is "1", its tail ("p": no tail, look for a parent; see
// MayBeAdopted): a plain completion (the common case) sends 7
// fields instead of 16, and every ARGV string costs Redis about 1,000
// instructions to read and hand to Lua.
var finishRecord = []struct {
	name string
	arg  func(r *FinishRecord) any
}{
	{"id", func(r *FinishRecord) any { return r.ID }},
	{"token", func(r *FinishRecord) any { return r.Token }},
	{"kind", func(r *FinishRecord) any { return r.Kind }},
	{"value", func(r *FinishRecord) any { return r.Value }},
	{"attemptsMade", func(r *FinishRecord) any { return r.AttemptsMade }},
	{"keep", func(r *FinishRecord) any { return r.Keep }},
	{"more", func(r *FinishRecord) any { return r.more() }},
	// the tail
	{"stacktrace", func(r *FinishRecord) any { return r.Stacktrace }},
	{"delay", func(r *FinishRecord) any { return r.Delay }},
	{"lifo", func(r *FinishRecord) any { return boolArg(r.LIFO) }},
	{"attempts", func(r *FinishRecord) any { return r.Attempts }},
	{"timeline", func(r *FinishRecord) any { return r.Timeline }},
	{"dedupId", func(r *FinishRecord) any { return r.DedupID }},
	{"hasParent", func(r *FinishRecord) any { return boolArg(r.HasParent || r.MayBeAdopted) }},
	{"due", func(r *FinishRecord) any { return r.Due }},
	{"tm", func(r *FinishRecord) any { return r.Telemetry }},
}

// finishHead is the number of head fields of a finish record.
const finishHead = 7

// hasTail: the record needs its tail. A completion reads none of the
// failure and retry fields (stacktrace, delay, lifo, attempts, due), so it
// sends the tail only for a timeline, a deduplication id or a parent;
// finishJobs.lua reads the tail's fields as ""/"0" when it is absent.
func (r *FinishRecord) hasTail() bool {
	return r.Kind != FinishCompleted || r.Timeline != "" || r.DedupID != "" || r.HasParent
}

// more is the record's "more" field: "1" its tail follows, "p" none
// follows but the job may have been adopted by a flow, "0" neither.
func (r *FinishRecord) more() string {
	switch {
	case r.hasTail():
		return "1"
	case r.MayBeAdopted:
		return "p"
	}
	return "0"
}

func finishRecordNames() []string {
	names := make([]string, len(finishRecord))
	for i, f := range finishRecord {
		names[i] = f.name
	}
	return names
}

// FinishJobs ends recs' attempts and fetches up to a.Count next jobs. The
// call is sent once (no client resend, see sentOnce): when its reply is
// lost, SettleCall says what it did.
// codes[i] is nil or the error for recs[i]. With metricsPoints > 0 the jobs
// it finishes for good are counted in BullMQ's per-minute metrics, keeping
// that many data points (WorkerOptions.Metrics), in the same atomic step.
func FinishJobs(ctx context.Context, rdb Doer, k keys.Queue, a FetchArgs, metricsPoints int, recs []FinishRecord) ([]error, Fetch, error) {
	refs := make([]*FinishRecord, len(recs))
	for i := range recs {
		refs[i] = &recs[i]
	}
	return FinishJobsRefs(ctx, rdb, k, a, metricsPoints, refs)
}

// FinishJobsRefs is FinishJobs for records the caller keeps elsewhere (the
// worker's, in each job's finish item): a slice of pointers to them instead
// of a copy of every record (about 180 bytes a job).
func FinishJobsRefs(ctx context.Context, rdb Doer, k keys.Queue, a FetchArgs, metricsPoints int, recs []*FinishRecord) ([]error, Fetch, error) {
	n := 11
	for i := range recs {
		if recs[i].hasTail() {
			n += len(finishRecord)
		} else {
			n += finishHead
		}
	}
	args := finishJobs.cmdArgs(k, n)
	args = append(args, a.Now, a.Count, a.Token, a.LockDuration, a.WorkerName, a.LimitMax, a.LimitWindow, a.promoteMax(), len(recs), metricsPoints, a.ExactLock)
	for i := range recs {
		fields := finishRecord
		if !recs[i].hasTail() {
			fields = fields[:finishHead]
		}
		for _, f := range fields {
			args = append(args, f.arg(recs[i]))
		}
	}
	res, err := finishJobs.sendOnce(ctx, rdb, args).Slice()
	if err != nil {
		return nil, Fetch{}, err
	}
	if len(res) != 4 {
		return nil, Fetch{}, fmt.Errorf("finishJobs: malformed reply %v", res)
	}
	errs := make([]error, len(recs))
	if done, ok := res[0].(int64); ok {
		// Every job done: the script sends their count instead of n zeros.
		if done != int64(len(recs)) {
			return nil, Fetch{}, fmt.Errorf("finishJobs: %d done of %d jobs", done, len(recs))
		}
	} else {
		codes, _ := res[0].([]any)
		if len(codes) != len(recs) {
			return nil, Fetch{}, fmt.Errorf("finishJobs: %d codes for %d jobs", len(codes), len(recs))
		}
		for i, c := range codes {
			errs[i] = CodeError(toInt(c))
		}
	}
	f, err := parseFetch(res[1], res[2], res[3], a.Now)
	return errs, f, err
}

// Settled is what a worker call whose reply was lost did (SettleCall).
type Settled struct {
	// Jobs are the jobs the call fetched that are still active under its
	// lock, each hash as MoveToActive returns it.
	Jobs []Fetched
	// Resend[i] is true when recs[i]'s job is still active under the
	// record's lock: the call did not end that attempt (or refused its
	// completion), so it is to be sent again.
	Resend []bool
	// Codes[i] is the outcome of recs[i] where Resend[i] is false: nil when
	// the call ended the attempt, else why nothing was written
	// (ErrLockMissing, ErrLockTaken), as FinishJobs reports it.
	Codes []error
}

// SettleCall settles a MoveToActive or FinishJobs call whose reply was lost
// (token is its FetchArgs.Token, recs its FinishJobs records, none for
// MoveToActive): it reports what the call did and marks it settled for ttl,
// so a copy of the call that reaches Redis later (held up by a paused
// server or a slow network) does nothing. The caller must not send the call
// again; it sends what is left under a new token.
func SettleCall(ctx context.Context, rdb Doer, k keys.Queue, token string, ttl time.Duration, recs []FinishRecord) (Settled, error) {
	return SettleManual(ctx, rdb, k, token, ttl, recs, ExactTake{})
}

// ExactTake names the job a manual call took with a lock of the caller's
// choosing (TakeJob, a FinishJobs with FetchArgs.ExactLock): the lock and
// the call's FetchArgs.Now, which the take wrote as the job's processedOn.
// The zero value: the call took no such job.
type ExactTake struct {
	Lock string
	At   int64
}

// SettleManual is SettleCall for a manual worker's call: the job its take
// locked with exact.Lock at exact.At is reported among Settled.Jobs too
// (token is then the call's own token, TakeJob's call or the FinishJobs
// call's FetchArgs.Token). A job the caller took with the same lock in the
// same millisecond by an earlier call would be reported as well.
func SettleManual(ctx context.Context, rdb Doer, k keys.Queue, token string, ttl time.Duration, recs []FinishRecord, exact ExactTake) (Settled, error) {
	args := make([]any, 0, 5+2*len(recs))
	args = append(args, token, max(ttl.Milliseconds(), 1), len(recs))
	for i := range recs {
		args = append(args, recs[i].ID, recs[i].Token)
	}
	if exact.Lock != "" {
		args = append(args, exact.Lock, exact.At)
	}
	res, err := settleCall.runOnce(ctx, rdb, k, args...).Slice()
	if err != nil {
		return Settled{}, err
	}
	if len(res) != 2 {
		return Settled{}, fmt.Errorf("settleCall: malformed reply %v", res)
	}
	f, err := parseFetch(nil, res[0], nil, exact.At)
	if err != nil {
		return Settled{}, err
	}
	codes, _ := res[1].([]any)
	if len(codes) != len(recs) {
		return Settled{}, fmt.Errorf("settleCall: %d codes for %d jobs", len(codes), len(recs))
	}
	s := Settled{Jobs: f.Jobs, Resend: make([]bool, len(recs)), Codes: make([]error, len(recs))}
	for i, c := range codes {
		if code := toInt(c); code == 1 {
			s.Resend[i] = true
		} else {
			s.Codes[i] = CodeError(code)
		}
	}
	return s, nil
}

// LostLock is a lock extendLocks could not renew.
type LostLock struct {
	ID string
	// Taken: another token holds the lock (the job was taken again or moved
	// by someone else); otherwise the lock is missing (it expired).
	Taken bool
}

// ExtendLocks renews the locks ids[i] held with tokens[i].
// workerID, when not "", names the worker whose wake key
// (keys.Queue.WorkerWake) gets wakeMs to live again.
func ExtendLocks(ctx context.Context, rdb Doer, k keys.Queue, lockMs int64, workerID string, wakeMs int64, ids, tokens []string) ([]LostLock, error) {
	args := make([]any, 0, 3+2*len(ids))
	args = append(args, lockMs, workerID, wakeMs)
	for i := range ids {
		args = append(args, ids[i], tokens[i])
	}
	res, err := extendLocks.run(ctx, rdb, k, args...).Slice()
	if err != nil {
		return nil, err
	}
	lost := make([]LostLock, 0, len(res)/2)
	for i := 0; i+1 < len(res); i += 2 {
		lost = append(lost, LostLock{ID: str(res[i]), Taken: str(res[i+1]) == "taken"})
	}
	return lost, nil
}

// Stalled is a job the stalled checker moved back to wait.
type Stalled struct {
	ID             string
	StalledCounter int
}

// MoveStalledJobsToWait runs one stalled check. ran is false when another
// worker ran it within the interval.
func MoveStalledJobsToWait(ctx context.Context, rdb Doer, k keys.Queue, now, intervalMs int64, maxStalled int) (ran bool, moved []Stalled, err error) {
	res, err := moveStalledJobsToWait.run(ctx, rdb, k, now, intervalMs, maxStalled).Slice()
	if err != nil {
		return false, nil, err
	}
	if len(res) != 2 {
		return false, nil, fmt.Errorf("moveStalledJobsToWait: malformed reply %v", res)
	}
	list, _ := res[1].([]any)
	for i := 0; i+1 < len(list); i += 2 {
		moved = append(moved, Stalled{ID: str(list[i]), StalledCounter: int(toInt(list[i+1]))})
	}
	return toInt(res[0]) == 1, moved, nil
}

// Pause pauses (pause=true) or resumes the queue. Reports whether it
// changed, once per call (a resend after a lost reply writes no second
// event and answers the first run's report).
func Pause(ctx context.Context, rdb Doer, k keys.Queue, call Call, pauseIt bool) (bool, error) {
	op := "resume"
	if pauseIt {
		op = "pause"
	}
	n, err := pause.run(ctx, rdb, k, op, call.Token, call.ttlMs()).Int64()
	return n == 1, err
}

// GetStates returns the state of each id.
func GetStates(ctx context.Context, rdb Doer, k keys.Queue, ids ...string) ([]string, error) {
	args := make([]any, 0, 1+len(ids))
	for _, id := range ids {
		args = append(args, id)
	}
	return getState.run(ctx, rdb, k, args...).StringSlice()
}

// GetRateLimitTTL returns the limiter key's remaining time in ms as BullMQ's
// getRateLimitTtl computes it (see getRateLimitTtl.lua); maxJobs 0 = none given.
func GetRateLimitTTL(ctx context.Context, rdb Doer, k keys.Queue, maxJobs int) (int64, error) {
	return getRateLimitTtl.run(ctx, rdb, k, maxJobs).Int64()
}

// GetCounts returns one count per state name.
func GetCounts(ctx context.Context, rdb Doer, k keys.Queue, states ...string) ([]int64, error) {
	args := make([]any, 0, 1+len(states))
	for _, s := range states {
		args = append(args, s)
	}
	return getCounts.run(ctx, rdb, k, args...).Int64Slice()
}

// GetRanges returns one page of ids per state.
func GetRanges(ctx context.Context, rdb Doer, k keys.Queue, start, end int64, asc bool, states ...string) ([][]string, error) {
	ascArg := "0"
	if asc {
		ascArg = "1"
	}
	args := make([]any, 0, 4+len(states))
	args = append(args, start, end, ascArg)
	for _, s := range states {
		args = append(args, s)
	}
	res, err := getRanges.run(ctx, rdb, k, args...).Slice()
	if err != nil {
		return nil, err
	}
	out := make([][]string, len(res))
	for i, r := range res {
		ids, _ := r.([]any)
		out[i] = make([]string, len(ids))
		for j, id := range ids {
			out[i][j] = str(id)
		}
	}
	return out, nil
}

// runCode runs a script that returns 0/1 or a negative code.
func runCode(ctx context.Context, s *script, rdb Doer, k keys.Queue, args ...any) (int64, error) {
	n, err := s.run(ctx, rdb, k, args...).Int64()
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return n, codeError(n)
	}
	return n, nil
}

// UpdateProgress stores progress (JSON) on job id and writes its event,
// once per call (a resend after a lost reply writes nothing).
func UpdateProgress(ctx context.Context, rdb Doer, k keys.Queue, call Call, id, progress string) error {
	_, err := runCode(ctx, updateProgress, rdb, k, id, progress, call.Token, call.ttlMs())
	return err
}

// UpdateData replaces job id's data (JSON).
func UpdateData(ctx context.Context, rdb Doer, k keys.Queue, id, data string) error {
	_, err := runCode(ctx, updateData, rdb, k, id, data)
	return err
}

// AddLog appends line to job id's log, keeping the newest keep lines (0 =
// all), once per call (a resend after a lost reply appends nothing and
// answers the first run's count).
func AddLog(ctx context.Context, rdb Doer, k keys.Queue, call Call, id, line string, keep int) (int64, error) {
	return runCode(ctx, addLog, rdb, k, id, line, keep, call.Token, call.ttlMs())
}

// RemoveJob deletes job id unless a worker holds it.
func RemoveJob(ctx context.Context, rdb Doer, k keys.Queue, call Call, id string, keepChildren bool) error {
	_, err := runCode(ctx, removeJob, rdb, k, id, call.Token, call.ttlMs(), boolArg(keepChildren))
	return err
}

// Promote moves delayed job id to wait now, resetting its attempt counters
// when asked.
func Promote(ctx context.Context, rdb Doer, k keys.Queue, call Call, id string, resetMade, resetStarted bool, nowMs int64) error {
	_, err := runCode(ctx, promote, rdb, k, id, boolArg(resetMade), boolArg(resetStarted), call.Token, call.ttlMs(), nowMs)
	return err
}

// ChangeDelay makes delayed job id due at now + delayMs.
func ChangeDelay(ctx context.Context, rdb Doer, k keys.Queue, call Call, id string, now, delayMs int64) error {
	_, err := runCode(ctx, changeDelay, rdb, k, id, now, delayMs, call.Token, call.ttlMs())
	return err
}

// ChangePriority gives job id a new priority, once per call (a resend
// after a lost reply takes no second priority counter).
func ChangePriority(ctx context.Context, rdb Doer, k keys.Queue, call Call, id string, priority int, lifo bool) error {
	_, err := runCode(ctx, changePriority, rdb, k, id, priority, boolArg(lifo), call.Token, call.ttlMs())
	return err
}

// Reprocess runs finished job id (in state "completed" or "failed") again.
// finishedByMs > 0 refuses (ErrNotInState) a job that finished after it.
// A reset leaves a boundary at nowMs in the job's attempt timeline.
func Reprocess(ctx context.Context, rdb Doer, k keys.Queue, call Call, id, state string, resetMade, resetStarted bool, finishedByMs, nowMs int64) error {
	by := ""
	if finishedByMs > 0 {
		by = strconv.FormatInt(finishedByMs, 10)
	}
	_, err := runCode(ctx, reprocessJob, rdb, k, id, state, boolArg(resetMade), boolArg(resetStarted), call.Token, call.ttlMs(), by, nowMs)
	return err
}

// MoveJobsToWait re-runs up to count jobs of state ("failed", "completed" or
// "delayed") finished at or before cutoffMs. more reports whether to call again.
// A reset leaves a boundary at nowMs in each job's attempt timeline.
func MoveJobsToWait(ctx context.Context, rdb Doer, k keys.Queue, call Call, state string, count int, cutoffMs int64, resetMade, resetStarted bool, nowMs int64) (more bool, ids []string, err error) {
	res, err := moveJobsToWait.run(ctx, rdb, k, state, count, cutoffMs, boolArg(resetMade), call.Token, call.ttlMs(), boolArg(resetStarted), nowMs).Slice()
	if err != nil {
		return false, nil, err
	}
	if len(res) != 2 {
		return false, nil, fmt.Errorf("moveJobsToWait: malformed reply %v", res)
	}
	list, _ := res[1].([]any)
	for _, id := range list {
		ids = append(ids, str(id))
	}
	return toInt(res[0]) == 1, ids, nil
}

// Drain deletes waiting (and, with delayed, delayed) jobs. It returns how
// many it deleted and the ids of the first name of them, in the order it
// deleted them.
func Drain(ctx context.Context, rdb Doer, k keys.Queue, call Call, delayed bool, name int) (int64, []string, error) {
	res, err := drain.run(ctx, rdb, k, boolArg(delayed), call.Token, call.ttlMs(), name).Slice()
	if err != nil {
		return 0, nil, err
	}
	if len(res) != 2 {
		return 0, nil, fmt.Errorf("drain: malformed reply %v", res)
	}
	list, _ := res[1].([]any)
	var ids []string
	for _, id := range list {
		ids = append(ids, str(id))
	}
	return toInt(res[0]), ids, nil
}

// Obliterate deletes up to count jobs of a paused queue; more reports whether
// to call again.
func Obliterate(ctx context.Context, rdb Doer, k keys.Queue, count int, force bool) (more bool, err error) {
	n, err := runCode(ctx, obliterate, rdb, k, count, boolArg(force))
	return n == 1, err
}

// Clean removes up to limit jobs of state older than cutoffMs.
func Clean(ctx context.Context, rdb Doer, k keys.Queue, call Call, state string, cutoffMs int64, limit int, part WindowPart) ([]string, error) {
	return cleanJobsInSet.run(ctx, rdb, k, state, cutoffMs, limit, call.Token, call.ttlMs(), "0", "",
		part.Prior, boolArg(part.Last)).StringSlice()
}

// WindowPart places one of Queue.Clean's script calls in the window of one
// BullMQ clean call, for its "cleaned" event: the window's last call writes
// one with the window's count, as BullMQ's one call does.
type WindowPart struct {
	Prior int  // how many the window's earlier calls removed
	Last  bool // the call is the window's last if it gets all it asks for
}

// CleanPart examines one part of the window of one BullMQ clean call, in
// a state not scored by age (wait, paused, active, delayed, prioritized):
// at most n jobs from position at (for a list, the part's first entry
// counted from the tail; for a set, its rank). It returns how many it
// examined, for a list how many of the window are left after them, and
// the removed ids.
func CleanPart(ctx context.Context, rdb Doer, k keys.Queue, call Call, state string, cutoffMs int64, n, at int, part WindowPart) (examined, rest int, ids []string, err error) {
	return cleanPartReply(cleanJobsInSet.run(ctx, rdb, k, state, cutoffMs, n, call.Token, call.ttlMs(), "0", at,
		part.Prior, boolArg(part.Last)))
}

// cleanPartReply reads cleanJobsInSet's {examined, rest, ids}.
func cleanPartReply(cmd *redis.Cmd) (examined, rest int, ids []string, err error) {
	res, err := cmd.Slice()
	if err != nil {
		return 0, 0, nil, err
	}
	if len(res) != 3 {
		return 0, 0, nil, fmt.Errorf("cleanJobsInSet: malformed reply %v", res)
	}
	list, _ := res[2].([]any)
	for _, id := range list {
		ids = append(ids, str(id))
	}
	return int(toInt(res[0])), int(toInt(res[1])), ids, nil
}

// CleanPreviewPart lists one page of the jobs a clean would remove now,
// running Clean's own script without its writes: at most n jobs examined
// from position at (for a list, the page's first entry counted from the
// tail; for a set, scored by age or not, its rank). It returns how many it
// examined, for a list how many of the window are left after them, and
// the ids a clean would remove.
func CleanPreviewPart(ctx context.Context, rdb Doer, k keys.Queue, state string, cutoffMs int64, n, at int) (examined, rest int, ids []string, err error) {
	return cleanPartReply(cleanJobsInSet.run(ctx, rdb, k, state, cutoffMs, n, "", 1, "1", at))
}

func boolArg(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func str(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case int64:
		return strconv.FormatInt(t, 10)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

func toInt(v any) int64 {
	switch t := v.(type) {
	case int64:
		return t
	case string:
		n, _ := strconv.ParseInt(t, 10, 64)
		return n
	}
	return 0
}
