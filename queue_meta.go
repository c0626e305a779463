package drover

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/seed40057009/drover/internal/orphans"
)

// QueueMeta is the queue's settings hash (the meta key both BullMQ and
// drover read), decoded as BullMQ's Queue.getMeta decodes it.
type QueueMeta struct {
	// Concurrency is the cap on jobs running at once across all workers
	// (SetGlobalConcurrency); ConcurrencySet is false when there is none.
	// A cap of 0 is set: it stops every worker.
	Concurrency    int
	ConcurrencySet bool
	// Max and Duration are the global rate limit's two fields
	// (SetGlobalRateLimit) as stored, 0 when absent; MaxSet and DurationSet
	// say whether each is stored (a stored "0" is set, as Node's getMeta
	// answers max: 0 for it; an empty field is not). Workers, and
	// GetGlobalRateLimit, ignore one without the other.
	Max         int
	MaxSet      bool
	Duration    time.Duration
	DurationSet bool
	// Paused is true when the paused field is "1", the value Pause writes
	// (BullMQ's getMeta test; IsPaused only asks whether the field exists).
	Paused bool
	// MaxLenEvents is the events stream's cap (opts.maxLenEvents), 0 when
	// not written yet; MaxLenEventsSet says whether it is stored (a stored
	// "0" is set, as for Node's getMeta).
	MaxLenEvents    int64
	MaxLenEventsSet bool
	// Version is the library that last opened the queue with a BullMQ
	// Queue object ("bullmq:6.7.0"): see GetVersion. "" when none did.
	Version string
	// Other holds every other field as stored, for fields a later BullMQ
	// adds; nil when there is none.
	Other map[string]string
}

// GetMeta reads the queue's settings hash in one HGETALL (BullMQ's
// getMeta). A numeric field that does not hold an integer is an error
// naming it; an empty one counts as absent and any other, "0" included,
// as set, as in BullMQ (which tests the stored string's truthiness).
func (q *Queue) GetMeta(ctx context.Context) (*QueueMeta, error) {
	if err := q.check(ctx); err != nil {
		return nil, err
	}
	fields, err := callWithin(ctx, q, func(ctx context.Context) (map[string]string, error) {
		return q.rdb.HGetAll(ctx, q.k.Meta()).Result()
	})
	if err != nil {
		return nil, fmt.Errorf("get meta of queue %q: %w", q.name, err)
	}
	m := &QueueMeta{}
	num := func(field, v string) (int64, error) {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("get meta of queue %q: field %s is %q, not an integer", q.name, field, v)
		}
		return n, nil
	}
	for f, v := range fields {
		var n int64
		switch f {
		case "concurrency", "max", "duration", "opts.maxLenEvents":
			if v == "" {
				continue
			}
			if n, err = num(f, v); err != nil {
				return nil, err
			}
		}
		switch f {
		case "concurrency":
			m.Concurrency, m.ConcurrencySet = int(n), true
		case "max":
			m.Max, m.MaxSet = int(n), true
		case "duration":
			m.Duration, m.DurationSet = time.Duration(n)*time.Millisecond, true
		case "opts.maxLenEvents":
			m.MaxLenEvents, m.MaxLenEventsSet = n, true
		case "paused":
			m.Paused = v == "1"
		case "version":
			m.Version = v
		default:
			if m.Other == nil {
				m.Other = make(map[string]string)
			}
			m.Other[f] = v
		}
	}
	return m, nil
}

// GetVersion returns the meta hash's version field (BullMQ's getVersion):
// "bullmq:<version>" once a Node BullMQ Queue opened the queue without
// skipMetasUpdate, "" when none did. drover never writes the field, so it
// names the Node library sharing the queue, not drover.
func (q *Queue) GetVersion(ctx context.Context) (string, error) {
	if err := q.check(ctx); err != nil {
		return "", err
	}
	v, err := callWithin(ctx, q, func(ctx context.Context) (string, error) {
		return q.rdb.HGet(ctx, q.k.Meta(), "version").Result()
	})
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("get version of queue %q: %w", q.name, err)
	}
	return v, nil
}

// IsMaxed reports whether the queue has reached its global concurrency
// (BullMQ's isMaxed): a cap is set and at least that many jobs are active,
// so no worker, drover's or Node's, takes another job now. Without a cap
// it is false. Both values are read in one MULTI.
func (q *Queue) IsMaxed(ctx context.Context) (bool, error) {
	if err := q.check(ctx); err != nil {
		return false, err
	}
	var capCmd *redis.StringCmd
	var active *redis.IntCmd
	err := pipelineWithin(ctx, q, true, func(p redis.Pipeliner) error {
		capCmd = p.HGet(ctx, q.k.Meta(), "concurrency")
		active = p.LLen(ctx, q.k.Active())
		return nil
	})
	if errors.Is(err, redis.Nil) || (err == nil && capCmd.Val() == "") {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("check whether queue %q is maxed: %w", q.name, err)
	}
	n, err := strconv.ParseInt(capCmd.Val(), 10, 64)
	if err != nil {
		return false, fmt.Errorf("check whether queue %q is maxed: meta field concurrency is %q, not an integer", q.name, capCmd.Val())
	}
	return active.Val() >= n, nil
}

// RemoveOrphanedJobs deletes job hashes, with their logs, lock and flow
// keys, that no state of the queue holds (BullMQ 6.7's removeOrphanedJobs):
// a one-time clean-up for the hashes that a regression of BullMQ's
// age-based retention (introduced in 5.66.6) left behind when it removed
// ids from completed or failed without their data. A healthy queue has
// none.
//
// It walks the queue's keys with SCAN, count a hint of how many keys each
// step reads (0 = 1000, BullMQ's default), and checks the job ids it finds
// in small batches, each one Lua script that deletes a job only if it is in
// none of wait, paused, active, prioritized, delayed, waiting-children,
// completed, failed and stalled at that moment: a job added, moved or
// finished meanwhile stays. Keys of deduplication ids, job schedulers and
// their runs, and metrics are never candidates. limit bounds the removals
// (0 = none); unlike BullMQ's, which stops only after the SCAN step that
// reaches limit, it is never exceeded, so call it again while it returns
// limit. The count is of jobs whose keys were deleted.
//
// Cost: each candidate that no sorted set holds is looked for in the wait,
// active and paused lists, O(length) each; on a large backlog run it
// when the queue is quiet.
func (q *Queue) RemoveOrphanedJobs(ctx context.Context, count, limit int) (int, error) {
	if count < 0 || limit < 0 {
		return 0, optionError("RemoveOrphanedJobs needs count >= 0 and limit >= 0, got %d and %d", count, limit)
	}
	if err := q.check(ctx); err != nil {
		return 0, err
	}
	n, err := orphans.Sweep(ctx, q.rdb, q.k, count, limit, true, q.opts.AddRetryWindow)
	if err != nil {
		return n, fmt.Errorf("remove orphaned jobs of queue %q: %w", q.name, err)
	}
	return n, nil
}

// promLabelName is Prometheus's rule for label names.
var promLabelName = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// promStates are the states ExportPrometheusMetrics counts, in BullMQ's
// order (getJobCounts without arguments).
var promStates = []JobState{StateActive, StateCompleted, StateDelayed, StateFailed, StatePrioritized, StateWaiting, StateWaitingChildren}

// ExportPrometheusMetrics renders the queue's job counts and totals in the
// Prometheus text format, byte for byte as BullMQ's exportPrometheusMetrics
// does: the gauge bullmq_job_count per state and the counters
// bullmq_job_completed_total and bullmq_job_failed_total (the count field
// of the metrics keys, 0 until a worker with metrics on, drover's
// WorkerOptions.Metrics or Node's metrics option, writes it), each
// labelled queue="<name>" followed by labels. Label names are written in
// sorted order (BullMQ's in the object's order) and must be valid
// Prometheus names other than queue and state; values are escaped. As
// BullMQ's, the text does not end with a newline, which the exposition
// format asks of its last line: add one when serving it.
//
// It suits a push or a hand-made endpoint for one queue. For scraping,
// package metrics' QueueCollector reports every queue with drover's own
// names (drover_queue_jobs{queue,state} and more) through
// client_golang; the two sets of names do not overlap.
func (q *Queue) ExportPrometheusMetrics(ctx context.Context, labels map[string]string) (string, error) {
	names := make([]string, 0, len(labels))
	for name := range labels {
		if !promLabelName.MatchString(name) || name == "queue" || name == "state" || strings.HasPrefix(name, "__") {
			return "", optionError("ExportPrometheusMetrics label name %q is not a Prometheus label name of its own (want [a-zA-Z_][a-zA-Z0-9_]*, not queue, state or __*)", name)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	if err := q.check(ctx); err != nil {
		return "", err
	}
	counts, err := q.GetJobCounts(ctx, promStates...)
	if err != nil {
		return "", err
	}
	var completed, failed *redis.StringCmd
	if _, err := q.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		completed = p.HGet(ctx, q.k.Metrics("completed"), "count")
		failed = p.HGet(ctx, q.k.Metrics("failed"), "count")
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return "", fmt.Errorf("export metrics of queue %q: %w", q.name, err)
	}
	total := func(kind string, c *redis.StringCmd) (int64, error) {
		v := c.Val()
		if v == "" {
			return 0, nil
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("export metrics of queue %q: count of metrics:%s is %q, not an integer", q.name, kind, v)
		}
		return n, nil
	}
	nCompleted, err := total("completed", completed)
	if err != nil {
		return "", err
	}
	nFailed, err := total("failed", failed)
	if err != nil {
		return "", err
	}

	var extra strings.Builder
	for _, name := range names {
		fmt.Fprintf(&extra, `, %s="%s"`, name, promEscape(labels[name]))
	}
	queue := `queue="` + promEscape(q.name) + `"`
	var b strings.Builder
	b.WriteString("# HELP bullmq_job_count Number of jobs in the queue by state\n# TYPE bullmq_job_count gauge\n")
	for _, s := range promStates {
		fmt.Fprintf(&b, "bullmq_job_count{%s, state=\"%s\"%s} %d\n", queue, s, extra.String(), counts[s])
	}
	b.WriteString("# HELP bullmq_job_completed_total Total number of completed jobs\n# TYPE bullmq_job_completed_total counter\n")
	fmt.Fprintf(&b, "bullmq_job_completed_total{%s%s} %d\n", queue, extra.String(), nCompleted)
	b.WriteString("# HELP bullmq_job_failed_total Total number of failed jobs\n# TYPE bullmq_job_failed_total counter\n")
	fmt.Fprintf(&b, "bullmq_job_failed_total{%s%s} %d", queue, extra.String(), nFailed)
	return b.String(), nil
}

// promEscape escapes a label value as BullMQ does: backslash, double
// quote and newline.
var promEscape = strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace
