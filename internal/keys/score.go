package keys

import (
	"strconv"
	"strings"
)

// The scores of BullMQ's delayed and prioritized sorted sets. These
// functions are the Go half; internal/scripts/lua/include/score.lua is the
// Lua half, with the same names and arithmetic. TestScoresAgreeWithLua
// (internal/scripts) holds them together. No other code computes a score.
const (
	// DelayedSeqSpan is how many jobs due in the same millisecond keep
	// their order in the delayed set: score = due ms * DelayedSeqSpan + seq.
	DelayedSeqSpan = 4096
	// PriorityBand is the width of one priority's band in the prioritized
	// set: score = priority * PriorityBand + (counter mod PriorityBand).
	PriorityBand = 1 << 32
)

// DelayedScore is the delayed-set score of the seq-th job due at dueMs
// (seq < DelayedSeqSpan). DelayedScore(due, 0) is the lowest score of jobs
// due at that millisecond.
func DelayedScore(dueMs, seq int64) int64 { return dueMs*DelayedSeqSpan + seq }

// DueOfScore is the due time (ms) of a delayed-set score.
func DueOfScore(score float64) int64 { return int64(score) / DelayedSeqSpan }

// ParseDueOfScore is DueOfScore for a score as Redis returns it ("" or
// not a number: ok false).
func ParseDueOfScore(s string) (dueMs int64, ok bool) {
	if s == "" {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil {
		return 0, false
	}
	return DueOfScore(f), true
}

// PriorityScore is the prioritized-set score of a job of priority taken
// with counter value counter (the queue's pc key). PriorityScore(p, 0) is
// the front of priority p's band.
func PriorityScore(priority int, counter int64) int64 {
	return int64(priority)*PriorityBand + counter%PriorityBand
}
