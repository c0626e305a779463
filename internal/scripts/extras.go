package scripts

import (
	"context"
	"fmt"

	"github.com/seed40057009/drover/internal/keys"
)

var (
	removeDedupKey            = load("removeDedupKey")
	getCountsPerPriority      = load("getCountsPerPriority")
	removeChildDependency     = load("removeChildDependency")
	removeUnprocessedChildren = load("removeUnprocessedChildren")
	removeRateLimitKey        = load("removeRateLimitKey")
)

// RemoveRateLimitKey deletes the queue's limiter key and reports whether
// there was one, once per call: a resend of the call after a lost reply is
// answered with the first run's report.
func RemoveRateLimitKey(ctx context.Context, rdb Doer, k keys.Queue, call Call) (bool, error) {
	n, err := runCode(ctx, removeRateLimitKey, rdb, k, call.Token, call.ttlMs())
	return n == 1, err
}

// RemoveDedupKey deletes the de: key of deduplication id deid when it still
// names job id (id "": whatever job it names); deid "" takes the job's
// stored deid. It reports whether it deleted the key, once per call: a
// resend of the call after a lost reply is answered with the first run's
// report.
func RemoveDedupKey(ctx context.Context, rdb Doer, k keys.Queue, call Call, id, deid string) (bool, error) {
	n, err := runCode(ctx, removeDedupKey, rdb, k, id, deid, call.Token, call.ttlMs())
	return n == 1, err
}

// GetCountsPerPriority counts the ready jobs of each priority (0 = the wait
// list), in the order given.
func GetCountsPerPriority(ctx context.Context, rdb Doer, k keys.Queue, priorities []int) ([]int64, error) {
	args := make([]any, len(priorities))
	for i, p := range priorities {
		args[i] = p
	}
	out, err := getCountsPerPriority.run(ctx, rdb, k, args...).Int64Slice()
	if err != nil {
		return nil, err
	}
	if len(out) != len(priorities) {
		return nil, fmt.Errorf("getCountsPerPriority: %d counts for %d priorities", len(out), len(priorities))
	}
	return out, nil
}

// RemoveChildDependency detaches flow child id from its parent. It reports
// false when the child was no longer one of the parent's pending
// dependencies.
func RemoveChildDependency(ctx context.Context, rdb Doer, k keys.Queue, call Call, id string) (bool, error) {
	n, err := runCode(ctx, removeChildDependency, rdb, k, id, call.Token, call.ttlMs())
	return n == 1, err
}

// RemoveUnprocessedChildren deletes the pending children of job id, depth
// first, and returns how many jobs it deleted.
func RemoveUnprocessedChildren(ctx context.Context, rdb Doer, k keys.Queue, call Call, id string) (int64, error) {
	return runCode(ctx, removeUnprocessedChildren, rdb, k, id, call.Token, call.ttlMs())
}

var removeOrphanedJobs = load("removeOrphanedJobs")

// RemoveOrphanedJobs finds those ids no state of the queue holds, at most
// limit of them (0 = no bound), deletes their keys when remove is set, and
// returns how many it found, once per call with a token (a resend after a
// lost reply is answered with the first run's count).
func RemoveOrphanedJobs(ctx context.Context, rdb Doer, k keys.Queue, call Call, limit int, remove bool, ids []string) (int64, error) {
	args := make([]any, 0, 4+len(ids))
	flag := "0"
	if remove {
		flag = "1"
	}
	args = append(args, limit, flag, call.Token, call.ttlMs())
	for _, id := range ids {
		args = append(args, id)
	}
	return runCode(ctx, removeOrphanedJobs, rdb, k, args...)
}

var readSummaries = load("readSummaries")

// Summary is one job's fields as ReadSummaries read them.
type Summary struct {
	// Values has one value per field asked for: a string, or nil when the
	// field is absent (no hash: every one nil).
	Values []any
	// ReasonLen is the stored failed reason's length in bytes (0 when
	// absent); the value is shorter when it was cut.
	ReasonLen int64
	// Score is the job's delayed-set score as Redis writes it, "" when not
	// asked for or not delayed.
	Score string
}

// SummaryCut says how ReadSummaries shortens long values.
type SummaryCut struct {
	// Reason cuts the failed reason to this many bytes, unless
	// WholeReason.
	Reason      int
	WholeReason bool
	// Trace cuts the last stack trace and the last attempt of the
	// timeline (whose error it leaves out when longer).
	Trace int
	// Score reads each job's delayed-set score too.
	Score bool
}

// ReadSummaries reads fields of the jobs ids (at most a few hundred a
// call: one script call holds the server while it runs) as a list shows
// them, shortened as cut says: the failed reason cut, the stacktrace and
// drover.attempts fields as their last entry alone, in their stored
// formats (see readSummaries.lua). It writes nothing.
func ReadSummaries(ctx context.Context, rdb Doer, k keys.Queue, cut SummaryCut, fields, ids []string) ([]Summary, error) {
	flags := ""
	if cut.WholeReason {
		flags += "w"
	}
	if cut.Score {
		flags += "d"
	}
	args := make([]any, 0, 4+len(fields)+len(ids))
	args = append(args, cut.Reason, cut.Trace, flags, len(fields))
	for _, f := range fields {
		args = append(args, f)
	}
	for _, id := range ids {
		args = append(args, id)
	}
	res, err := readSummaries.run(ctx, rdb, k, args...).Slice()
	if err != nil {
		return nil, err
	}
	if len(res) != len(ids) {
		return nil, fmt.Errorf("readSummaries: %d entries for %d jobs", len(res), len(ids))
	}
	out := make([]Summary, len(ids))
	for i, r := range res {
		e, ok := r.([]any)
		if !ok || len(e) < 2 {
			return nil, fmt.Errorf("readSummaries: malformed entry %v", r)
		}
		vals, ok := e[0].([]any)
		if !ok || len(vals) != len(fields) {
			return nil, fmt.Errorf("readSummaries: malformed values %v", e[0])
		}
		n, _ := e[1].(int64)
		out[i] = Summary{Values: vals, ReasonLen: n}
		if len(e) > 2 {
			out[i].Score, _ = e[2].(string)
		}
	}
	return out, nil
}
