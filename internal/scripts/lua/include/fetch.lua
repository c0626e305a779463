-- fetch.lua: promote due delayed jobs and move up to `count` ready jobs to
-- active, locking each. Used by moveToActive and by the fetch-next step of
-- finishJobs. Expects common.lua and these locals in scope: waitKey, activeKey,
-- prioritizedKey, delayedKey, eventsKey, metaKey, markerKey, pcKey, base; and
-- in ARGV: 2 now ms, 9 the highest delayed-set score due at now (Go computes
-- it: a Lua number passed to redis.call is printf-formatted, which costs
-- more than the command it bounds).
--@include activate

-- promoteDelayed moves every delayed job due at `now` (up to 1000) to wait or
-- prioritized, resetting its relative delay. Returns how many moved.
local function promoteDelayed(blocked)
  local due = rcall("ZRANGEBYSCORE", delayedKey, "0", ARGV[9], "LIMIT", "0", "1000")
  local n = #due
  if n == 0 then
    return 0
  end
  rcall("ZREM", delayedKey, unpack(due))
  for i = 1, n do
    local id = due[i]
    local jobKey = base .. id
    local priority = jobPriority(rcall("HGET", jobKey, "priority"))
    pushReady(waitKey, prioritizedKey, pcKey, id, priority, false)
    rcall("XADD", eventsKey, "*", "event", "waiting", "jobId", id, "prev", "delayed")
    rcall("HSET", jobKey, "delay", "0")
  end
  addBaseMarker(markerKey, blocked)
  return n
end

-- takeReady pops up to `count` ids, wait first (right end), then
-- prioritized. It returns them and whether they are in active already:
-- with moveOne, one job (a worker's next at concurrency 1) moves from wait
-- to active with one LMOVE, as BullMQ's moveToActive does, instead of an
-- RPOP and an LPUSH (each command a script runs costs Redis about 8,000
-- instructions). Only a caller that has written already may ask for it:
-- Redis refuses a script whose first write may grow memory (LMOVE, LPUSH)
-- while it is out of memory, and an RPOP first lets a fetch go on then.
-- moveOne "tried": the caller's own LMOVE found no job in wait (an empty
-- list, or a pre-v5 marker it took out of active again), so the wait list
-- is not tried again (finishJobs' single job). moveOne a table: the ids
-- finishJobs' own RPOP took from wait, fewer than count (markers dropped),
-- so the rest come from prioritized (finishJobs' straight batch).
local function takeReady(count, moveOne)
  local ids
  if moveOne == "tried" then
    ids = {}
  elseif moveOne == true and count == 1 then
    local id = rcall("LMOVE", waitKey, activeKey, "RIGHT", "LEFT")
    if id and string.sub(id, 1, 2) ~= "0:" then
      return {id}, true
    end
    if id then
      -- A pre-v5 marker, never a job: take it out of active again.
      rcall("LREM", activeKey, 1, id)
    end
    ids = {}
  elseif moveOne and moveOne ~= true then
    ids = moveOne
  else
    ids = rcall("RPOP", waitKey, count) or {}
    for i = #ids, 1, -1 do
      -- "0:<n>" entries are pre-v5 markers, never jobs: drop them.
      if string.sub(ids[i], 1, 2) == "0:" then
        table.remove(ids, i)
      end
    end
  end
  if #ids < count then
    local want = count - #ids
    local pz = rcall("ZPOPMIN", prioritizedKey, want)
    for i = 1, #pz, 2 do
      ids[#ids + 1] = pz[i]
    end
    -- Prioritized is empty now: the priority counter restarts. A Node
    -- worker with slots left over fetches again at once, and that empty
    -- fetch deletes it, so this batch fetch does too.
    if #pz < want * 2 then
      rcall("DEL", pcKey)
    end
  end
  return ids, false
end

-- rateLimitTTL returns how long (ms) the queue's rate limiter blocks new
-- activations, or 0 with the number of activations still allowed in the
-- current window (nil when no limit applies). The limit is meta "max" or the
-- worker's; a window ending now (PTTL 0) is cleared. A full key without an
-- expiry (PTTL -1: set by hand, or its PEXPIRE lost) limits nothing: BullMQ's
-- getRateLimitTTL answers 0 for it and its workers go on counting in it, so
-- the count caps no batch here either (a cap of 0 would fetch nothing, for good).
local function rateLimit(metaMax, workerMax)
  local maxJobs = tonumber(metaMax) or (workerMax > 0 and workerMax or nil)
  if not maxJobs then
    return 0, nil, nil
  end
  local used = tonumber(rcall("GET", limiterKey)) or 0
  if used >= maxJobs then
    local pttl = rcall("PTTL", limiterKey)
    if pttl == 0 then
      rcall("DEL", limiterKey)
      used = 0
    elseif pttl > 0 then
      return pttl, 0, maxJobs
    else
      return 0, nil, maxJobs
    end
  end
  return 0, maxJobs - used, maxJobs
end

-- fetchJobs returns {nextDelayedScore|false, {id, hash, ...}, blocked,
-- rateLimitTTL}: blocked is true when the queue is paused or at its global
-- concurrency; rateLimitTTL > 0 says the rate limiter refuses activations for
-- that many ms. Each job is locked with token .. ":" .. id; the caller
-- passes a token unique to this call, so every activation of a job has its
-- own lock token (and no number is formatted here). limit is {max, durationMs}
-- from the worker (0 = none); meta "max" wins for max, the worker's duration
-- wins over meta "duration", as in BullMQ.
-- meta is {paused, concurrency, max, duration} from the meta hash when the
-- caller read it already (finishJobs), else nil. exact (moveToActive's
-- manual take only) locks each job with token itself, the caller's own lock
-- value, as BullMQ's moveToActive does; the worker's calls leave it nil.
-- noPromote (finishJobs fetching nothing) leaves due delayed jobs where
-- they are, as BullMQ's moveToFinished without fetchNext does. moveOne
-- (finishJobs after it wrote) lets one job move with LMOVE (takeReady);
-- "tried": finishJobs' own LMOVE found no job in wait; a table: the ids
-- its own RPOP took (see takeReady).
local function fetchJobs(now, count, token, lockDuration, workerName, limitMax, limitDuration, meta, exact, noPromote, moveOne)
  -- finishJobs' fetch-next is a busy worker's: it consumed no marker, so
  -- no blocked worker waits on one it took (see the cascade below).
  local busy = meta ~= nil
  -- Redis formats a Lua number argument with printf; pass the caller's text.
  local nowText = ARGV[2]
  meta = meta or rcall("HMGET", metaKey, "paused", "concurrency", "max", "duration")
  local blocked = meta[1] ~= false
  local room = nil
  if not blocked and meta[2] then
    room = tonumber(meta[2]) - rcall("LLEN", activeKey)
    blocked = room <= 0
  end
  if not noPromote then
    promoteDelayed(blocked)
  end
  if blocked or count <= 0 then
    return {false, {}, blocked, 0}
  end
  local ttl, allowed, maxJobs = rateLimit(meta[3], limitMax)
  if ttl > 0 then
    return {false, {}, false, ttl}
  end
  local asked = count
  if allowed and allowed < count then
    count = allowed
  end
  if room and room < count then
    count = room
  end
  local window = limitDuration > 0 and limitDuration or (tonumber(meta[4]) or 0)
  local ids, inActive = takeReady(count, moveOne)
  local out = {}
  if #ids == 0 then
    local first = rcall("ZRANGE", delayedKey, 0, 0, "WITHSCORES")
    return {first[2] or false, out, false, 0}
  end
  if not inActive then
    rcall("LPUSH", activeKey, unpack(ids))
  end
  for i = 1, #ids do
    local id = ids[i]
    local jobKey = base .. id
    local hash = rcall("HGETALL", jobKey)
    if #hash == 0 then
      -- A listed id without a job hash cannot be worked: drop it, never lock it.
      rcall("LREM", activeKey, 1, id)
    else
      activate(id, jobKey, hash, exact and token or token .. ":" .. id, lockDuration, workerName, nowText, maxJobs, window)
      out[#out + 1] = id
      out[#out + 1] = hash
    end
  end
  -- Cascade the wake-up to other blocked workers only if work remains (none
  -- can when fewer jobs were ready than asked for). A worker blocks only on
  -- an empty queue, and whatever filled it since (an add, a promotion, a
  -- retry, a resume) left a marker that only a blocking fetch consumes, and
  -- that fetch cascades. So a busy worker's fetch-next writes none, except
  -- under a global concurrency: workers blocked on a full queue have no
  -- marker coming when a slot frees, and this fetch may leave slots over.
  if #ids == count and (not busy or room) and (rcall("LLEN", waitKey) > 0 or rcall("ZCARD", prioritizedKey) > 0) then
    rcall("ZADD", markerKey, "0", "0")
  end
  -- Fewer jobs than asked for: the caller has slots left and will wait, so
  -- it needs the earliest delayed job's due time as much as after a fetch
  -- of none. No marker may be left to tell it: a job promoted while the
  -- queue was paused wrote none, and the resume's marker woke this fetch.
  local nextDue = false
  if #ids < asked then
    nextDue = rcall("ZRANGE", delayedKey, 0, 0, "WITHSCORES")[2] or false
  end
  return {nextDue, out, false, 0}
end
