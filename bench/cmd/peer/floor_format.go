package main

import "github.com/redis/go-redis/v9"

// floorFormatFinishFetch is the format floor: the Redis commands BullMQ's
// state asks of a worker that finishes plain completions and fetches the
// next jobs, in one script of straight-line Lua (no helper functions, no
// per-job record beyond the id), so it measures what those commands cost
// and nothing of how a script is organised. It is the floor (floor.go) plus
// what sharing a queue with Node BullMQ needs on this path:
//
//   - the meta hash (paused, global concurrency, rate limit, event cap), read
//     once a call: Node may pause the queue or set a limit at any time;
//   - a look for flow children (EXISTS of the jobs' :dependencies and
//     :unsuccessful): a job may become a parent while it runs;
//   - the job's id out of the stalled set, as BullMQ's finish does;
//   - the events stream capped (XADD MAXLEN ~ for one job, XTRIM for more);
//   - due delayed jobs promoted before a fetch (a Node producer adds them);
//   - one job moved with LMOVE at concurrency 1, as BullMQ's moveToActive.
//
// It is not a queue and keeps none of drover's other duties (the reply-loss
// protocol's call mark, retries, retention, flows, markers). bench/peer runs
// it as -impl floor-format, for the process scenario only; it is a
// measurement (bench/results/issue16-s18.md), not a column of bench-compare.
// KEYS wait, active, completed, events, meta, delayed, stalled. ARGV 1 job
// key base, 2 now ms, 3 lock token, 4 fetch count, 5 highest delayed score
// due now, then the finished jobs' ids.
var floorFormatFinishFetch = redis.NewScript(`
local wait, active, completed, events, metaKey, delayed, stalled =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local base, now, token = ARGV[1], ARGV[2], ARGV[3]
local meta = redis.call("HMGET", metaKey, "opts.maxLenEvents", "paused", "concurrency", "max", "duration")
local maxLen = meta[1] or "10000"
local n = #ARGV - 5
if n > 0 then
  local ids, lockKeys, probe = {}, {}, {}
  for i = 1, n do
    local jobKey = base .. ARGV[5 + i]
    ids[i] = ARGV[5 + i]
    lockKeys[i] = jobKey .. ":lock"
    probe[2 * i - 1] = jobKey .. ":dependencies"
    probe[2 * i] = jobKey .. ":unsuccessful"
  end
  local locks = redis.call("MGET", unpack(lockKeys))
  for i = 1, n do
    if locks[i] ~= token then
      return redis.error_reply("lock lost: " .. ids[i])
    end
  end
  if redis.call("EXISTS", unpack(probe)) > 0 then
    return redis.error_reply("a job has children")
  end
  if n >= 8 then
    local leaving, stay = {}, {}
    for i = 1, n do
      leaving[ids[i]] = true
    end
    local list = redis.call("LRANGE", active, "0", "-1")
    for k = 1, #list do
      if not leaving[list[k]] then
        stay[#stay + 1] = list[k]
      end
    end
    redis.call("DEL", active)
    if #stay > 0 then
      redis.call("RPUSH", active, unpack(stay))
    end
  else
    for i = 1, n do
      redis.call("LREM", active, "-1", ids[i])
    end
  end
  redis.call("DEL", unpack(lockKeys))
  redis.call("SREM", stalled, unpack(ids))
  local members = {}
  for i = 1, n do
    redis.call("HSET", base .. ids[i], "atm", "1", "returnvalue", "null", "finishedOn", now)
    members[2 * i - 1] = now
    members[2 * i] = ids[i]
  end
  redis.call("ZADD", completed, unpack(members))
  if n > 1 then
    redis.call("XTRIM", events, "MAXLEN", "~", maxLen)
    for i = 1, n do
      redis.call("XADD", events, "*", "event", "completed", "jobId", ids[i], "returnvalue", "null", "prev", "active")
    end
  else
    redis.call("XADD", events, "MAXLEN", "~", maxLen, "*", "event", "completed", "jobId", ids[1], "returnvalue", "null", "prev", "active")
  end
end
if meta[2] then
  return {}
end
redis.call("ZRANGEBYSCORE", delayed, "0", ARGV[5], "LIMIT", "0", "1000")
local count = tonumber(ARGV[4])
local ids
if count == 1 then
  local id = redis.call("LMOVE", wait, active, "RIGHT", "LEFT")
  ids = id and {id} or {}
else
  ids = redis.call("RPOP", wait, count) or {}
  if #ids > 0 then
    redis.call("LPUSH", active, unpack(ids))
  end
end
local out = {}
for i = 1, #ids do
  local jobKey = base .. ids[i]
  out[2 * i - 1] = ids[i]
  out[2 * i] = redis.call("HGETALL", jobKey)
  redis.call("SET", jobKey .. ":lock", token, "PX", "30000", "GET")
  redis.call("HSET", jobKey, "processedOn", now, "ats", "1")
  redis.call("XADD", events, "*", "event", "active", "jobId", ids[i], "prev", "waiting")
end
return out
`)

// floorFormatKeys are the KEYS of floorFormatFinishFetch.
var floorFormatKeys = []string{floorBase + "wait", floorBase + "active", floorBase + "completed",
	floorBase + "events", floorBase + "meta", floorBase + "delayed", floorBase + "stalled"}

func newFloorFormat(cfg config) (impl, error) {
	f, err := newFloor(cfg)
	if err != nil {
		return nil, err
	}
	f.(*floorImpl).format = true
	return f, nil
}
