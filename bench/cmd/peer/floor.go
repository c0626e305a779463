package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// floorImpl is not a queue: it is the least Redis work per added and per
// processed job that anything keeping BullMQ's state must do, to bound the
// targets of the add_single, process, pickup, callgrind_c100 and grow rows
// (bench/README.md, "floor"). Add is one minimal script call per job
// (floorAdd). For the process rows, jobs are seeded by drover's bulk add
// (the same hashes and keys as the drover column), and the worker is one
// loop that, like a worker at concurrency c writing its results together
// with its next fetch, makes one script call per batch of c jobs
// (floorFinishFetch), and blocks on the queue's marker when nothing is
// waiting (so the pickup row has a floor: the marker wake-up and one fetch
// call after a minimal add). Everything else a real worker does (pause,
// global concurrency and rate limit checks, delayed promotion, the markers
// it writes, stalled bookkeeping, retention, metrics, retries, flows, lock
// renewal) is left out, so an implementation can only spend more per job
// than this.
type floorImpl struct {
	*droverImpl
	stop chan struct{}
	done chan error
	// format: run floorFormatFinishFetch instead (-impl floor-format,
	// floor_format.go).
	format bool
}

// floorBase is the job key base of the queue every implementation uses.
const floorBase = droverPrefix + ":" + queueName + ":"

func newFloor(cfg config) (impl, error) {
	d, err := newDrover(cfg)
	if err != nil {
		return nil, err
	}
	return &floorImpl{droverImpl: d.(*droverImpl)}, nil
}

// floorAdd is the least an add does in BullMQ's format: the id counter, the
// job hash, the wait list, the "added" and "waiting" events and the marker
// that wakes a blocked worker. KEYS id, wait, marker, events; ARGV 1 job key
// base, 2 name, 3 data, 4 now ms. It returns the new job's id.
var floorAdd = redis.NewScript(`
local id = tostring(redis.call("INCR", KEYS[1]))
redis.call("HSET", ARGV[1] .. id, "name", ARGV[2], "data", ARGV[3], "opts", "{}",
  "timestamp", ARGV[4], "delay", "0", "priority", "0")
redis.call("LPUSH", KEYS[2], id)
redis.call("XADD", KEYS[4], "*", "event", "added", "jobId", id, "name", ARGV[2])
redis.call("XADD", KEYS[4], "*", "event", "waiting", "jobId", id)
redis.call("ZADD", KEYS[3], "0", "0")
return id
`)

// Add adds one job with floorAdd: one call per add, as a client without
// group commit makes (asynq's enqueue is one script call too).
func (f *floorImpl) Add(ctx context.Context, j jobSpec) error {
	data, err := json.Marshal(payload{I: j.I, At: j.At, P: j.Pad})
	if err != nil {
		return err
	}
	keys := []string{floorBase + "id", floorBase + "wait", floorBase + "marker", floorBase + "events"}
	return floorAdd.Run(ctx, f.rdb, keys, floorBase, queueName, data, time.Now().UnixMilli()).Err()
}

// floorFinishFetch finishes the previous batch (one MGET of the locks, the
// active list (one rewrite from 8 jobs on, as drover does), one DEL of the
// locks, the result fields, one ZADD to completed, the "completed" events)
// and takes the next one (wait, active list, the job hashes, locks,
// processedOn and ats, the "active" events), returning the hashes.
// KEYS wait, active, completed, events. ARGV 1 job key base, 2 now ms,
// 3 lock token, 4 fetch count, then the finished jobs' ids.
var floorFinishFetch = redis.NewScript(`
local wait, active, completed, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local base, now, token = ARGV[1], ARGV[2], ARGV[3]
local n = #ARGV - 4
if n > 0 then
  local lockKeys = {}
  for i = 1, n do
    lockKeys[i] = base .. ARGV[4 + i] .. ":lock"
  end
  local locks = redis.call("MGET", unpack(lockKeys))
  local ids, dels, leaving = {}, {}, {}
  for i = 1, n do
    if locks[i] == token then
      ids[#ids + 1] = ARGV[4 + i]
      dels[#dels + 1] = lockKeys[i]
      leaving[ARGV[4 + i]] = true
    end
  end
  if #ids >= 8 then
    -- One read and one rewrite of the active list instead of a scan per job.
    local stay = {}
    for _, id in ipairs(redis.call("LRANGE", active, "0", "-1")) do
      if not leaving[id] then
        stay[#stay + 1] = id
      end
    end
    redis.call("DEL", active)
    if #stay > 0 then
      redis.call("RPUSH", active, unpack(stay))
    end
  else
    for _, id in ipairs(ids) do
      redis.call("LREM", active, "-1", id)
    end
  end
  if #ids > 0 then
    redis.call("DEL", unpack(dels))
    local members = {}
    for _, id in ipairs(ids) do
      redis.call("HSET", base .. id, "returnvalue", "null", "finishedOn", now, "atm", "1")
      redis.call("XADD", events, "*", "event", "completed", "jobId", id, "returnvalue", "null")
      members[#members + 1] = now
      members[#members + 1] = id
    end
    redis.call("ZADD", completed, unpack(members))
  end
end
local ids = redis.call("RPOP", wait, ARGV[4])
if not ids then
  return {}
end
redis.call("LPUSH", active, unpack(ids))
local out = {}
for i = 1, #ids do
  local jobKey = base .. ids[i]
  out[#out + 1] = ids[i]
  out[#out + 1] = redis.call("HGETALL", jobKey)
  redis.call("SET", jobKey .. ":lock", token, "PX", "30000")
  redis.call("HSET", jobKey, "processedOn", now, "ats", "1")
  redis.call("XADD", events, "*", "event", "active", "jobId", ids[i], "prev", "waiting")
end
return out
`)

func (f *floorImpl) Start(ctx context.Context, h handler) error {
	keys := []string{floorBase + "wait", floorBase + "active", floorBase + "completed", floorBase + "events"}
	load := floorFinishFetch.Load
	if f.format {
		keys, load = floorFormatKeys, floorFormatFinishFetch.Load
	}
	if err := load(ctx, f.rdb).Err(); err != nil {
		return err
	}
	f.stop, f.done = make(chan struct{}), make(chan error, 1)
	go func() {
		f.done <- f.loop(context.WithoutCancel(ctx), h, keys)
	}()
	return nil
}

// loop runs batches until wait is empty and the last batch is finished, or
// until Stop.
func (f *floorImpl) loop(ctx context.Context, h handler, keys []string) error {
	var finished []string
	for {
		select {
		case <-f.stop:
			return nil
		default:
		}
		now := time.Now().UnixMilli()
		args := make([]any, 0, 5+len(finished))
		args = append(args, floorBase, strconv.FormatInt(now, 10), "floor", f.cfg.Concurrency)
		script := floorFinishFetch
		if f.format {
			// The highest delayed-set score due now: (due ms << 12) + sequence.
			args = append(args, strconv.FormatInt((now+1)*4096-1, 10))
			script = floorFormatFinishFetch
		}
		for _, id := range finished {
			args = append(args, id)
		}
		out, err := script.EvalSha(ctx, f.rdb, keys, args...).Slice()
		if err != nil {
			return err
		}
		finished = finished[:0]
		for i := 0; i+1 < len(out); i += 2 {
			id, _ := out[i].(string)
			hash, _ := out[i+1].([]any)
			var p payload
			for k := 0; k+1 < len(hash); k += 2 {
				if hash[k] == "data" {
					if err := json.Unmarshal([]byte(hash[k+1].(string)), &p); err != nil {
						return fmt.Errorf("job %s: data: %w", id, err)
					}
				}
			}
			if err := h(ctx, p, 1); err != nil {
				return fmt.Errorf("job %s: the floor has no retries: %w", id, err)
			}
			finished = append(finished, id)
		}
		if len(out) == 0 {
			// Nothing waiting: block on the marker that floorAdd (and any
			// BullMQ-format add) writes, as a BullMQ worker does; the pickup
			// row's floor is this wake-up plus one fetch call. go-redis
			// blocks in whole seconds, so Stop may wait up to one.
			err := f.rdb.BZPopMin(ctx, time.Second, floorBase+"marker").Err()
			if err != nil && err != redis.Nil {
				return err
			}
		}
	}
}

func (f *floorImpl) Stop(ctx context.Context) error {
	if f.stop == nil {
		return nil
	}
	close(f.stop)
	select {
	case err := <-f.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}
