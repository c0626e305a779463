// Package bigqueue writes large queues in BullMQ's layout straight from Lua,
// a million jobs in seconds, for the benchmarks that measure how drover's
// reads and workers cost as a queue grows (bench/cmd/peer's grow and
// bigqueue scenarios, the dashboard's BenchmarkBigQueue). What it writes is
// what a BullMQ or drover producer leaves for a plain job: the job hash and
// its entry in one state's list or set, and the id counter past the last
// id, so jobs added afterwards get fresh ids.
package bigqueue

import (
	"context"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Layout is how Load spreads the jobs over the states.
type Layout int

const (
	// Mixed: 90 % waiting, 5 % delayed (due over the next hours), 3 %
	// completed, 2 % failed after 3 attempts.
	Mixed Layout = iota
	// Completed: every job completed (a queue that keeps what it ran).
	Completed
)

// callSize is how many jobs one loader call writes: about 0.3 s of Redis
// per call, so a load does not hold the server for the whole million.
const callSize = 50_000

// Load writes jobs 1..n named "bench" with data {"i":N} under base (the
// queue's key prefix, "bull:name:"), in calls of 50,000 jobs.
func Load(ctx context.Context, rdb redis.Scripter, base string, n int, layout Layout) error {
	var s *redis.Script
	switch layout {
	case Mixed:
		s = loadMixed
	case Completed:
		s = loadCompleted
	default:
		return fmt.Errorf("bigqueue: unknown layout %d", layout)
	}
	for from := 1; from <= n; from += callSize {
		to := min(from+callSize-1, n)
		if err := s.Run(ctx, rdb, []string{base + "wait"}, base, from, to, time.Now().UnixMilli()).Err(); err != nil {
			return fmt.Errorf("bigqueue: load jobs %d to %d: %w", from, to, err)
		}
	}
	return nil
}

// loadCompleted writes jobs ARGV[2]..ARGV[3] under the base ARGV[1] as
// completed, stamped ARGV[4].
var loadCompleted = redis.NewScript(`
local base, from, to, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
for i = from, to do
  local id = tostring(i)
  redis.call("HSET", base .. id, "name", "bench", "data", '{"i":' .. id .. '}', "opts", '{"attempts":1}',
    "timestamp", now, "delay", 0, "priority", 0, "atm", 1, "ats", 1,
    "processedOn", now, "finishedOn", now, "returnvalue", "null")
  redis.call("ZADD", base .. "completed", now, id)
end
redis.call("SET", base .. "id", to)
return to
`)

// loadMixed writes jobs ARGV[2]..ARGV[3] under the base ARGV[1] in the
// Mixed layout, stamped ARGV[4], and one added event.
var loadMixed = redis.NewScript(`
local base, from, to, now = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
for i = from, to do
  local id = tostring(i)
  local r = i % 100
  local atm = 0
  if r >= 95 then atm = 3 end
  redis.call("HSET", base .. id, "name", "bench", "data", '{"i":' .. id .. '}', "opts", '{"attempts":3}',
    "timestamp", now, "delay", 0, "priority", 0, "atm", atm, "ats", atm)
  if r < 90 then
    redis.call("RPUSH", base .. "wait", id)
  elseif r < 95 then
    redis.call("ZADD", base .. "delayed", (now + i) * 4096 + (i % 4096), id)
  elseif r < 98 then
    redis.call("HSET", base .. id, "finishedOn", now, "processedOn", now, "returnvalue", "null")
    redis.call("ZADD", base .. "completed", now, id)
  else
    redis.call("HSET", base .. id, "finishedOn", now, "processedOn", now, "failedReason", "boom", "stacktrace", '["Error: boom"]')
    redis.call("ZADD", base .. "failed", now, id)
  end
end
redis.call("SET", base .. "id", to)
redis.call("XADD", base .. "events", "*", "event", "added")
return to
`)
