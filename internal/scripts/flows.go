package scripts

import (
	"context"
	"fmt"

	"github.com/seed40057009/drover/internal/keys"
)

var (
	addFlow               = load("addFlow")
	moveToWaitingChildren = load("moveToWaitingChildren")
)

// FlowRecord is one job of a flow for AddFlow. Data and Opts are JSON texts.
type FlowRecord struct {
	Base        string // "<prefix>:<queue>:" of the job's queue
	ID          string // always set (BullMQ gives flow jobs UUIDs)
	Name        string
	Timestamp   int64 // ms
	Data        string
	Opts        string
	Delay       int64 // ms
	Priority    int
	LIFO        bool
	ParentIndex int    // 1-based index of the parent's record in the call; 0 = ParentKey or none
	ParentKey   string // a root's parent, an existing job's full key; "" = none
	ParentJSON  string // the job hash's "parent" field; "" = no parent
	HasChildren bool
	DedupID     string
	DedupTTL    int64 // ms
	DedupFlags  string
}

// flowRecord is the schema of addFlow's per-job record, read by the Lua
// through the REC table (--@record flow).
var flowRecord = []struct {
	name string
	arg  func(r *FlowRecord) any
}{
	{"base", func(r *FlowRecord) any { return r.Base }},
	{"id", func(r *FlowRecord) any { return r.ID }},
	{"name", func(r *FlowRecord) any { return r.Name }},
	{"timestamp", func(r *FlowRecord) any { return r.Timestamp }},
	{"data", func(r *FlowRecord) any { return r.Data }},
	{"opts", func(r *FlowRecord) any { return r.Opts }},
	{"delay", func(r *FlowRecord) any { return r.Delay }},
	{"priority", func(r *FlowRecord) any { return r.Priority }},
	{"lifo", func(r *FlowRecord) any { return boolArg(r.LIFO) }},
	{"parentIndex", func(r *FlowRecord) any { return r.ParentIndex }},
	{"parentKey", func(r *FlowRecord) any { return r.ParentKey }},
	{"parentJSON", func(r *FlowRecord) any { return r.ParentJSON }},
	{"hasChildren", func(r *FlowRecord) any { return boolArg(r.HasChildren) }},
	{"dedupId", func(r *FlowRecord) any { return r.DedupID }},
	{"dedupTTL", func(r *FlowRecord) any { return r.DedupTTL }},
	{"dedupFlags", func(r *FlowRecord) any { return r.DedupFlags }},
}

func flowRecordNames() []string {
	names := make([]string, len(flowRecord))
	for i, f := range flowRecord {
		names[i] = f.name
	}
	return names
}

// FlowRefusedError says addFlow refused a tree and wrote nothing: Err is
// ErrParentNotFound or ErrParentConflict, Record the 0-based index of the
// record it is about.
type FlowRefusedError struct {
	Err    error
	Record int
}

func (e *FlowRefusedError) Error() string {
	return fmt.Sprintf("flow job %d: %v", e.Record, e.Err)
}

func (e *FlowRefusedError) Unwrap() error { return e.Err }

// AddFlow stores flow trees (their records, parents first) in one atomic
// call; k is the first root's queue (every record's base must share its
// cluster slot). Like AddJobs, the call is stored once however often the
// client resends it.
func AddFlow(ctx context.Context, rdb Doer, k keys.Queue, call Call, now int64, recs []FlowRecord) ([]AddOutcome, error) {
	args := make([]any, 0, 4+len(flowRecord)*len(recs))
	args = append(args, call.Token, call.ttlMs(), now, len(recs))
	for i := range recs {
		for _, f := range flowRecord {
			args = append(args, f.arg(&recs[i]))
		}
	}
	res, err := addFlow.runOnce(ctx, rdb, k, args...).Slice()
	if err != nil {
		return nil, err
	}
	if len(res) == 2 {
		if code, ok := res[0].(int64); ok {
			return nil, &FlowRefusedError{Err: codeError(code), Record: int(toInt(res[1])) - 1}
		}
	}
	return parseAddReply(res, nil)
}

// MoveToWaitingChildren parks active job id, locked with token, in
// waiting-children while a child is pending (childKey: that child only;
// "" = any), storing timeline (the attempt timeline with this attempt
// recorded; "" = unchanged) with the move. moved is false when there is
// nothing to wait for.
func MoveToWaitingChildren(ctx context.Context, rdb Doer, k keys.Queue, id, token, childKey string, now int64, timeline string) (moved bool, err error) {
	n, err := runCode(ctx, moveToWaitingChildren, rdb, k, id, token, childKey, now, timeline)
	return n == 0 && err == nil, err
}
