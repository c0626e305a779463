// Package keys builds every Redis key name drover uses. The names are
// BullMQ's: "<prefix>:<queue>:<suffix>" for queue keys and
// "<prefix>:<queue>:<jobId>[:<suffix>]" for job keys. No other package builds
// key strings.
//
// In a Redis Cluster every key of a queue must live in one hash slot, so the
// prefix or the queue name carries a {hash tag}; [HashTag] and [Slot] let
// callers check that.
package keys

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// DefaultPrefix is BullMQ's default key prefix.
const DefaultPrefix = "bull"

// Queue names the keys of one queue.
type Queue struct {
	prefix string
	name   string
	base   string // "<prefix>:<name>:"
	script []string
	args   []any // numkeys, the declared keys and the base, boxed once
}

// ValidateName reports whether a queue name is usable: non-empty and free of
// ':' (BullMQ refuses it too, since ':' separates key parts).
func ValidateName(name string) error {
	if name == "" {
		return errors.New("queue name must not be empty")
	}
	if strings.Contains(name, ":") {
		return fmt.Errorf("queue name %q must not contain ':'", name)
	}
	return nil
}

// New returns the key set of queue name under prefix ("" = DefaultPrefix).
func New(prefix, name string) Queue {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	q := Queue{prefix: prefix, name: name, base: prefix + ":" + name + ":"}
	q.script = []string{
		q.Wait(), q.Active(), q.Prioritized(), q.Delayed(), q.Completed(), q.Failed(),
		q.Paused(), q.WaitingChildren(), q.Events(), q.Meta(), q.Marker(), q.PriorityCounter(),
		q.ID(), q.Stalled(), q.StalledCheck(), q.Limiter(),
	}
	q.args = make([]any, 0, len(q.script)+2)
	q.args = append(q.args, len(q.script))
	for _, k := range q.script {
		q.args = append(q.args, k)
	}
	q.args = append(q.args, q.base)
	return q
}

func (q Queue) Prefix() string { return q.prefix }
func (q Queue) Name() string   { return q.name }

// Base is "<prefix>:<queue>:", the string job keys start with. Scripts build
// job keys from it, so it must hash like the queue keys (it carries the tag).
func (q Queue) Base() string { return q.base }

func (q Queue) Wait() string            { return q.base + "wait" }
func (q Queue) Active() string          { return q.base + "active" }
func (q Queue) Prioritized() string     { return q.base + "prioritized" }
func (q Queue) Delayed() string         { return q.base + "delayed" }
func (q Queue) Completed() string       { return q.base + "completed" }
func (q Queue) Failed() string          { return q.base + "failed" }
func (q Queue) Paused() string          { return q.base + "paused" }
func (q Queue) WaitingChildren() string { return q.base + "waiting-children" }
func (q Queue) Events() string          { return q.base + "events" }
func (q Queue) Meta() string            { return q.base + "meta" }
func (q Queue) Marker() string          { return q.base + "marker" }
func (q Queue) PriorityCounter() string { return q.base + "pc" }
func (q Queue) ID() string              { return q.base + "id" }
func (q Queue) Stalled() string         { return q.base + "stalled" }
func (q Queue) StalledCheck() string    { return q.base + "stalled-check" }
func (q Queue) Limiter() string         { return q.base + "limiter" }
func (q Queue) Repeat() string          { return q.base + "repeat" }

// LimiterFull is the count a manual rate limit (BullMQ's queue.rateLimit,
// drover's Queue.RateLimit) stores in the Limiter key: JavaScript's
// Number.MAX_SAFE_INTEGER, above any max, so every worker that applies a
// limit sees the window as used up until the key expires.
const LimiterFull = 1<<53 - 1

// Metrics is the metrics hash of kind "completed" or "failed"; its data
// points list is Metrics(kind) + ":data".
func (q Queue) Metrics(kind string) string { return q.base + "metrics:" + kind }

// JobScheduler is the hash of job scheduler id ("<base>repeat:<id>").
func (q Queue) JobScheduler(id string) string { return q.base + "repeat:" + id }

// Job is the hash of job id.
func (q Queue) Job(id string) string { return q.base + id }

// Lock is the lock of job id, holding the token of the worker running it.
func (q Queue) Lock(id string) string { return q.base + id + ":lock" }

// Logs is the log list of job id.
func (q Queue) Logs(id string) string { return q.base + id + ":logs" }

// Dependencies is the set of the job keys of job id's pending flow
// children; Processed maps finished children's keys to their return values;
// IgnoredFailures maps the keys of children that failed with
// ignoreDependencyOnFailure or continueParentOnFailure to their failed
// reasons (BullMQ's ":failed"); Unsuccessful scores the keys of children
// that failed with failParentOnFailure by when.
func (q Queue) Dependencies(id string) string    { return q.base + id + ":dependencies" }
func (q Queue) Processed(id string) string       { return q.base + id + ":processed" }
func (q Queue) IgnoredFailures(id string) string { return q.base + id + ":failed" }
func (q Queue) Unsuccessful(id string) string    { return q.base + id + ":unsuccessful" }

// Dedup is the key that holds the job owning deduplication id dedupID.
func (q Queue) Dedup(dedupID string) string { return q.base + "de:" + dedupID }

// WorkerWake is a short-lived key a worker blocks on beside the marker, so
// Close can wake it without waiting for the block timeout. A waiting
// worker pops it as soon as it is written; one written while the worker is
// busy stays until its next wait, with a lifetime its lock renewals keep
// up, so the key of a worker killed without Close expires.
func (q Queue) WorkerWake(workerID string) string { return q.base + "marker:" + workerID }

// CancelChannel is the pub/sub channel on which the drover worker workerID
// hears cancel requests for the jobs it runs. It carries the queue's hash
// tag, so on a cluster the publishing script and the subscriber meet on the
// node of the queue's slot.
func (q Queue) CancelChannel(workerID string) string { return q.base + "drover:cancel:" + workerID }

// CancelRequests is the hash in which cancelJob.lua also keeps, for a
// minute, each cancel request it published to the drover worker workerID
// (field: the attempt's lock token; value: the message), so a worker whose
// subscription missed it (a half-open connection Redis still counted)
// reads it there. drover only; it expires by itself.
func (q Queue) CancelRequests(workerID string) string { return q.base + "drover:cancels:" + workerID }

// ScriptArgs is "numkeys, KEYS..., base" of an EVALSHA call, boxed once per
// queue so each script call does not allocate them again: every queue key
// (ScriptKeys), or, for a Standalone key set, the wait list alone. The
// caller must not modify it.
func (q Queue) ScriptArgs() []any { return q.args }

// Standalone is q for a client that is not a Redis Cluster client: its
// scripts get one key, the wait list, and build the others from the base
// (include/queue.lua), which costs Redis less per call than 16 declared
// keys. On a cluster the full set is declared: the server checks declared
// keys before a script runs, so a call to a migrating slot is redirected
// whole instead of failing on the first key that has moved.
func (q Queue) Standalone() Queue {
	q.args = []any{1, q.Wait(), q.base}
	return q
}

// ScriptKeys is every queue key a drover script uses (built from the base
// inside the script, include/queue.lua), in the order queue.lua names them.
// The caller must not modify it.
func (q Queue) ScriptKeys() []string { return q.script }

// reservedIDs are queue key suffixes a custom job id must not equal, or the
// job hash would overwrite a queue key.
var reservedIDs = map[string]bool{
	"wait": true, "active": true, "prioritized": true, "delayed": true, "completed": true,
	"failed": true, "paused": true, "waiting-children": true, "events": true, "meta": true,
	"marker": true, "pc": true, "id": true, "stalled": true, "stalled-check": true,
	"limiter": true, "repeat": true, "metrics": true, "priority": true, "delay": true,
}

// ValidateJobID applies BullMQ's rules for custom job ids, plus checks
// against ids that would collide with queue keys or that no URL path can
// carry:
//   - not empty, not "0", not starting with "0:" (reserved for legacy markers);
//   - not integer-looking: refused exactly when JavaScript's
//     String(parseInt(id, 10)) === id, as BullMQ's Job.validateOptions does
//     ("123", "-5", "1234567890123456", "100000000000000000000"; not "007",
//     "-0", "+5" or "12345678901234567", which parseInt rounds);
//   - no ':' unless it splits into exactly three parts (scheduler ids);
//   - not "." or "..": BullMQ accepts them, but a URL path segment of "." or
//     ".." is removed by every HTTP client, so no dashboard could show them.
func ValidateJobID(id string) error {
	switch {
	case id == "":
		return errors.New("job id must not be empty")
	case id == "0" || strings.HasPrefix(id, "0:"):
		return fmt.Errorf("job id %q is reserved: ids \"0\" and \"0:...\" mark legacy wake-ups", id)
	case isIntegerLooking(id):
		return fmt.Errorf("job id %q must not be an integer: integer ids are drawn from the queue's counter", id)
	case strings.Contains(id, ":") && strings.Count(id, ":") != 2:
		return fmt.Errorf("job id %q must not contain ':'", id)
	case id == "." || id == "..":
		return fmt.Errorf("job id %q is not allowed: a URL path cannot carry it", id)
	case reservedIDs[id] || strings.HasPrefix(id, "de:") || strings.HasPrefix(id, "dn:") ||
		strings.HasPrefix(id, "metrics:") || strings.HasPrefix(id, "marker:"):
		return fmt.Errorf("job id %q collides with a queue key name", id)
	}
	return nil
}

// IntegerLooking reports whether id is integer-looking (see ValidateJobID):
// an id no custom id can be, so only the queue's counter makes it.
func IntegerLooking(id string) bool { return isIntegerLooking(id) }

// isIntegerLooking reports JavaScript's `String(parseInt(id, 10)) === id`.
// Only "-"? followed by digits can equal a number's decimal rendering, so
// the id is read as parseInt reads it (a float64, correctly rounded) and
// rendered as Number.prototype.toString does: the shortest digits that read
// back to the same float, in plain notation below 1e21 and exponent form
// from 1e21 on (which never equals a digit string). -0 renders as "0".
func isIntegerLooking(id string) bool {
	digits := strings.TrimPrefix(id, "-")
	if digits == "" || len(digits) > 21 {
		return false // 22+ digits are >= 1e21: rendered with an exponent
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return false
		}
	}
	if len(digits) <= 15 {
		// Up to 15 digits a float64 holds the number exactly, and renders
		// it with the same digits unless they start with a 0 (then only "0"
		// itself: "-0" renders as "0"). The worker asks this of every job
		// it finishes, and the float round trip cost 2 % of its CPU at
		// concurrency 1.
		return digits[0] != '0' || id == "0"
	}
	f, err := strconv.ParseFloat(id, 64)
	if err != nil || f == 0 && id != "0" || math.Abs(f) >= 1e21 {
		return false
	}
	return strconv.FormatFloat(f, 'f', -1, 64) == id
}

// HashTag returns the {tag} part Redis Cluster hashes for key, and whether
// key has one (the first '{' followed by a non-empty '...}').
func HashTag(key string) (string, bool) {
	open := strings.IndexByte(key, '{')
	if open < 0 {
		return "", false
	}
	end := strings.IndexByte(key[open+1:], '}')
	if end <= 0 {
		return "", false
	}
	return key[open+1 : open+1+end], true
}

// Slot is the Redis Cluster hash slot of key.
func Slot(key string) int {
	if tag, ok := HashTag(key); ok {
		key = tag
	}
	return int(crc16(key) % 16384)
}

// crc16 is CRC-16/XMODEM, the checksum Redis Cluster uses for slots.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}
