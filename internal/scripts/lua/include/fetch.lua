-- fetch.lua: promote due delayed jobs and move up to `count` ready jobs to
-- active, locking each. Used by moveToActive and by the fetch-next step of
-- finishJobs. Expects common.lua and these locals in scope: waitKey, activeKey,
-- prioritizedKey, delayedKey, eventsKey, metaKey, markerKey, pcKey, base.

-- promoteDelayed moves every delayed job due at `now` (up to 1000) to wait or
-- prioritized, resetting its relative delay. Returns how many moved.
local function promoteDelayed(now, blocked)
  local due = rcall("ZRANGEBYSCORE", delayedKey, 0, (now + 1) * 4096 - 1, "LIMIT", 0, 1000)
  local n = #due
  if n == 0 then
    return 0
  end
  rcall("ZREM", delayedKey, unpack(due))
  for i = 1, n do
    local id = due[i]
    local jobKey = base .. id
    local priority = tonumber(rcall("HGET", jobKey, "priority")) or 0
    pushReady(waitKey, prioritizedKey, pcKey, id, priority, false)
    rcall("XADD", eventsKey, "*", "event", "waiting", "jobId", id, "prev", "delayed")
    rcall("HSET", jobKey, "delay", 0)
  end
  addBaseMarker(markerKey, blocked)
  return n
end

-- takeReady pops up to `count` ids, wait first (right end), then prioritized.
local function takeReady(count)
  local ids = {}
  local popped = rcall("RPOP", waitKey, count)
  if popped then
    for i = 1, #popped do
      -- "0:<n>" entries are pre-v5 markers, never jobs: drop them.
      if string.sub(popped[i], 1, 2) ~= "0:" then
        ids[#ids + 1] = popped[i]
      end
    end
  end
  if #ids < count then
    local want = count - #ids
    local pz = rcall("ZPOPMIN", prioritizedKey, want)
    for i = 1, #pz, 2 do
      ids[#ids + 1] = pz[i]
    end
    if #pz < want * 2 then
      rcall("DEL", pcKey)
    end
  end
  return ids
end

-- fetchJobs returns {nextDelayedScore|false, {id, hash, ...}, blocked} where
-- blocked is true when the queue is paused or at its global concurrency. Each job is
-- locked with token .. ":" .. attemptsStarted, so every activation of a job
-- has its own token.
local function fetchJobs(now, count, token, lockDuration, workerName)
  local blocked = pausedOrMaxed(metaKey, activeKey)
  promoteDelayed(now, blocked)
  if blocked or count <= 0 then
    return {false, {}, blocked}
  end
  local conc = rcall("HGET", metaKey, "concurrency")
  if conc then
    local room = tonumber(conc) - rcall("LLEN", activeKey)
    if room < count then
      count = room
    end
  end
  local ids = takeReady(count)
  local out = {}
  if #ids == 0 then
    local first = rcall("ZRANGE", delayedKey, 0, 0, "WITHSCORES")
    return {first[2] or false, out, false}
  end
  rcall("LPUSH", activeKey, unpack(ids))
  for i = 1, #ids do
    local id = ids[i]
    local jobKey = base .. id
    local hash = rcall("HGETALL", jobKey)
    if #hash == 0 then
      -- A listed id without a job hash cannot be worked: drop it, never lock it.
      rcall("LREM", activeKey, 1, id)
    else
    local ats = 0
    for f = 1, #hash, 2 do
      if hash[f] == "ats" then
        ats = tonumber(hash[f + 1])
        break
      end
    end
    ats = ats + 1
    rcall("SET", jobKey .. ":lock", token .. ":" .. ats, "PX", lockDuration)
    if workerName ~= "" then
      rcall("HSET", jobKey, "processedOn", now, "ats", ats, "pb", workerName)
    else
      rcall("HSET", jobKey, "processedOn", now, "ats", ats)
    end
    rcall("XADD", eventsKey, "*", "event", "active", "jobId", id, "prev", "waiting")
    out[#out + 1] = id
    out[#out + 1] = hash
    end
  end
  -- Cascade the wake-up to other blocked workers only if work remains.
  if rcall("LLEN", waitKey) > 0 or rcall("ZCARD", prioritizedKey) > 0 then
    rcall("ZADD", markerKey, 0, "0")
  end
  return {false, out, false}
end
