-- common.lua: helpers shared by every drover script (inlined by the loader).
-- Time always arrives from Go in ARGV; these helpers never call TIME.

--@include prologue
--@include score

-- inChunks runs cmd on key with items, size of them a command: one command
-- for thousands of ids, within the number of values Lua's unpack returns.
local function inChunks(cmd, key, items, size)
  for from = 1, #items, size do
    rcall(cmd, key, unpack(items, from, math.min(from + size - 1, #items)))
  end
end

-- maxEvents returns the events stream cap from the meta hash, writing the
-- BullMQ default (10000) when the queue has none yet. It returns the text,
-- which goes straight to XADD/XTRIM (a Lua number would be printf-formatted).
local function maxEvents(metaKey)
  local n = rcall("HGET", metaKey, "opts.maxLenEvents")
  if n then
    return n
  end
  rcall("HSET", metaKey, "opts.maxLenEvents", "10000")
  return "10000"
end

-- pausedOrMaxed is true when the queue is paused or when its global
-- concurrency (meta "concurrency") is used up by the active list.
local function pausedOrMaxed(metaKey, activeKey)
  local m = rcall("HMGET", metaKey, "paused", "concurrency")
  if m[1] then
    return true
  end
  if m[2] then
    return rcall("LLEN", activeKey) >= tonumber(m[2])
  end
  return false
end

-- addBaseMarker wakes one blocked worker: "there may be a job ready now".
local function addBaseMarker(markerKey, blocked)
  if not blocked then
    rcall("ZADD", markerKey, "0", "0")
  end
end

-- addDelayMarker records when the earliest delayed job is due, so blocked
-- workers sleep exactly until then. Returns the raw min score or nil.
local function addDelayMarker(markerKey, delayedKey)
  local first = rcall("ZRANGE", delayedKey, 0, 0, "WITHSCORES")
  if first[2] then
    rcall("ZADD", markerKey, dueOfScore(first[2]), "1")
    return first[2]
  end
  return nil
end

-- delayedScore is the score for the next job due at due ms: after the ones
-- already due then (FIFO for up to DELAYED_SEQ_SPAN of them; see score.lua).
local function delayedScore(delayedKey, due)
  local lo = delayedScoreOf(due, 0)
  local hi = delayedScoreOf(due, DELAYED_SEQ_SPAN - 1)
  local top = rcall("ZREVRANGEBYSCORE", delayedKey, hi, lo, "WITHSCORES", "LIMIT", 0, 1)
  if top[2] then
    local s = tonumber(top[2])
    if s >= hi then
      return hi
    end
    return s + 1
  end
  return lo
end

-- jobPriority is a job hash's priority field as a number: 0 when absent or
-- no number, and when NaN (Lua reads "NaN" and "nan" as NaN, which is not
-- 0: as a score it makes ZADD fail after the job left the set it was in,
-- and the job is lost). The job decoder reads such a value as 0 too.
local function jobPriority(v)
  local p = tonumber(v)
  if not p or p ~= p then
    return 0
  end
  return p
end

-- priorityScore orders prioritized jobs by priority, then FIFO via the counter.
local function priorityScore(prioritizedKey, pcKey, priority)
  local c = rcall("INCR", pcKey)
  return priorityScoreOf(priority, c)
end

-- removeJobKeys deletes a job and every per-job key BullMQ may have made
-- (the lock is left to expire, as BullMQ does). Returns how many existed.
local function removeJobKeys(jobKey)
  return rcall("DEL", jobKey, jobKey .. ":logs", jobKey .. ":dependencies",
    jobKey .. ":processed", jobKey .. ":failed", jobKey .. ":unsuccessful")
end

-- pushReady puts a job where workers take it from: wait (priority 0) or
-- prioritized. lifo pushes to the front of wait.
local function pushReady(waitKey, prioritizedKey, pcKey, id, priority, lifo)
  if priority == 0 then
    if lifo then
      rcall("RPUSH", waitKey, id)
    else
      rcall("LPUSH", waitKey, id)
    end
  else
    rcall("ZADD", prioritizedKey, priorityScore(prioritizedKey, pcKey, priority), id)
  end
end
