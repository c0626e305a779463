-- finishJobs: end the current attempt of a batch of active jobs, then fetch
-- the next jobs for the freed slots, all in one atomic step.
-- Each job needs its lock token; a job whose lock is gone or held by another
-- token, or that is no longer active, is left untouched and reported.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 now ms, 3 fetch count, 4 lock token base, 5 lock duration
--   ms, 6 worker name, 7 worker rate limit max, 8 worker rate limit window ms,
--   9 job count n, then n records of 14 fields:
--   id, token, kind, value, stacktrace JSON ("" = unchanged), attemptsMade
--   after this attempt, keep spec (include/retention.lua), delay ms, lifo
--   ("1"/"0"), attempts allowed, attempt timeline JSON ("" = unchanged),
--   deduplication id the job owns ("" = none), "1" when the job is a child
--   of a flow (its parent is updated when it finishes, see parent.lua), due
--   time ms for "d"/"m" (the caller's attempt end + delay, so the score and
--   the attempt timeline name the same instant).
--   kind: "c" completed (value = returnvalue JSON), "f" failed for good
--   (value = failedReason), "r" retry now, "d" retry after `delay` (both
--   value = failedReason), "w" back to wait without spending an attempt
--   (worker shutdown), "m" moved to delayed by the processor itself (no
--   attempt spent, like BullMQ's DelayedError).
-- Returns {codes, nextDelayedScore|false, {id, hash, ...}, rateLimitTTL ms}
--   where codes[i] is
--   0 done, -1 job missing, -2 lock missing, -3 not active, -6 lock taken.
--@include common
--@include queue
--@include retention
--@include parent
--@include fetch

local now = tonumber(ARGV[2])
local n = tonumber(ARGV[9])
-- One read of the meta hash serves the event cap here and the fetch below.
local meta = rcall("HMGET", metaKey, "opts.maxLenEvents", "paused", "concurrency", "max", "duration")
local maxLen = meta[1]
if not maxLen then
  maxLen = maxEvents(metaKey)
end
-- Every event below is written with MAXLEN ~, which keeps the stream near
-- its cap as BullMQ's XTRIM before a finish does, without a command of its own.
local codes = {}
local trims = {}
local delayed = false

-- releaseDedup frees the job's deduplication id once it finishes, unless the
-- key carries a TTL (then it expires on its own) or another job owns it.
local function releaseDedup(id, deid)
  local dedupKey = base .. "de:" .. deid
  local pttl = rcall("PTTL", dedupKey)
  if pttl == 0 or (pttl == -1 and rcall("GET", dedupKey) == id) then
    rcall("DEL", dedupKey)
  end
end

local function noteTrim(setKey, spec)
  if spec ~= "" and spec ~= "0" then
    trims[setKey .. "\n" .. spec] = {setKey, spec}
  end
end

-- Pass 1: which jobs does this worker still own? One MGET reads every
-- lock. A lock held with the job's token proves the job exists: every path
-- that deletes a job refuses locked jobs or deletes the lock with it.
local recordAt = function(i) return 9 + i * 14 end
local lockKeys = {}
for i = 0, n - 1 do
  lockKeys[i + 1] = base .. ARGV[recordAt(i) + 1] .. ":lock"
end
local locks = n > 0 and rcall("MGET", unpack(lockKeys)) or {}
local owned = {}
local mine = {}
for i = 0, n - 1 do
  local o = recordAt(i)
  local id = ARGV[o + 1]
  local lock = locks[i + 1]
  if lock ~= ARGV[o + 2] then
    if lock then
      codes[i + 1] = -6
    elseif rcall("EXISTS", base .. id) == 0 then
      codes[i + 1] = -1
    else
      codes[i + 1] = -2
    end
  else
    codes[i + 1] = -3 -- until found in active
    mine[#mine + 1] = i
  end
end

-- Take the owned jobs out of active. One LREM per job scans the list each
-- time; for a big batch it is cheaper to read the list once and write back
-- what stays (same order, so BullMQ's readers see no difference).
local activeLen = #mine >= 8 and rcall("LLEN", activeKey) or 0
if #mine >= 8 and activeLen <= 16 * #mine then
  local leaving = {}
  for _, i in ipairs(mine) do
    leaving[ARGV[recordAt(i) + 1]] = i
  end
  local stay = {}
  for _, id in ipairs(rcall("LRANGE", activeKey, 0, -1)) do
    local i = leaving[id]
    if i and codes[i + 1] == -3 then
      codes[i + 1] = 0
    else
      stay[#stay + 1] = id
    end
  end
  rcall("DEL", activeKey)
  for from = 1, #stay, 5000 do
    rcall("RPUSH", activeKey, unpack(stay, from, math.min(from + 4999, #stay)))
  end
else
  for _, i in ipairs(mine) do
    if rcall("LREM", activeKey, "-1", ARGV[recordAt(i) + 1]) > 0 then
      codes[i + 1] = 0
    end
  end
end
for _, i in ipairs(mine) do
  if codes[i + 1] == 0 then
    owned[#owned + 1] = i
  end
end
if #owned > 0 then
  local dels, ids = {}, {}
  for k, i in ipairs(owned) do
    dels[k] = lockKeys[i + 1]
    ids[k] = ARGV[recordAt(i) + 1]
  end
  rcall("DEL", unpack(dels))
  rcall("SREM", stalledKey, unpack(ids))
end

-- Pass 2: move each owned job to its next state. Finished jobs are added to
-- their set with one ZADD per set at the end.
local finished = {[completedKey] = {}, [failedKey] = {}}
for _, i in ipairs(owned) do
  local o = recordAt(i)
  local id = ARGV[o + 1]
  local kind = ARGV[o + 3]
  local value = ARGV[o + 4]
  local jobKey = base .. id
  local stack = ARGV[o + 5]
  local atm = ARGV[o + 6]
  local timeline = ARGV[o + 11]
  local fields = {}
  if kind ~= "c" and kind ~= "w" and kind ~= "m" then
    fields[#fields + 1] = "failedReason"
    fields[#fields + 1] = value
    if stack ~= "" then
      fields[#fields + 1] = "stacktrace"
      fields[#fields + 1] = stack
    end
  end
  if kind ~= "w" and kind ~= "m" then
    fields[#fields + 1] = "atm"
    fields[#fields + 1] = atm
  end
  if timeline ~= "" then
    fields[#fields + 1] = "drover.attempts"
    fields[#fields + 1] = timeline
  end

  if kind == "c" or kind == "f" then
    local deid = ARGV[o + 12]
    if deid ~= "" then
      releaseDedup(id, deid)
    end
    if ARGV[o + 13] == "1" then
      if kind == "c" then
        childCompleted(jobKey, value, now)
      else
        childFailed(jobKey, value, now)
      end
    end
    local spec = ARGV[o + 7]
    local setKey = kind == "c" and completedKey or failedKey
    if spec == "0" then
      removeJobKeys(jobKey)
    else
      fields[#fields + 1] = kind == "c" and "returnvalue" or "failedReason"
      fields[#fields + 1] = value
      fields[#fields + 1] = "finishedOn"
      fields[#fields + 1] = ARGV[2]
      rcall("HSET", jobKey, unpack(fields))
      if kind == "f" then
        rcall("HDEL", jobKey, "defa")
      end
      local add = finished[setKey]
      add[#add + 1] = ARGV[2]
      add[#add + 1] = id
      noteTrim(setKey, spec)
    end
    if kind == "c" then
      rcall("XADD", eventsKey, "MAXLEN", "~", maxLen, "*", "event", "completed", "jobId", id, "returnvalue", value, "prev", "active")
    else
      rcall("XADD", eventsKey, "MAXLEN", "~", maxLen, "*", "event", "failed", "jobId", id, "failedReason", value, "prev", "active")
      if tonumber(atm) >= tonumber(ARGV[o + 10]) then
        rcall("XADD", eventsKey, "*", "event", "retries-exhausted", "jobId", id, "attemptsMade", atm)
      end
    end
  elseif kind == "r" or kind == "w" then
    if #fields > 0 then
      rcall("HSET", jobKey, unpack(fields))
    end
    -- Read the priority now: changePriority may have changed it meanwhile.
    local priority = tonumber(rcall("HGET", jobKey, "priority")) or 0
    local blocked = pausedOrMaxed(metaKey, activeKey)
    if kind == "r" then
      pushReady(waitKey, prioritizedKey, pcKey, id, priority, ARGV[o + 9] == "1")
      addBaseMarker(markerKey, blocked)
    elseif priority > 0 then
      -- Back to the front of its priority band, as BullMQ's move-back does.
      rcall("ZADD", prioritizedKey, priority * 4294967296, id)
    else
      rcall("RPUSH", waitKey, id)
      addBaseMarker(markerKey, blocked)
    end
    rcall("XADD", eventsKey, "MAXLEN", "~", maxLen, "*", "event", "waiting", "jobId", id, "prev", "active")
  else -- "d" or "m"
    local due = ARGV[o + 14]
    fields[#fields + 1] = "delay"
    fields[#fields + 1] = ARGV[o + 8]
    rcall("HSET", jobKey, unpack(fields))
    rcall("ZADD", delayedKey, delayedScore(delayedKey, due), id)
    rcall("XADD", eventsKey, "MAXLEN", "~", maxLen, "*", "event", "delayed", "jobId", id, "delay", due)
    delayed = true
  end
end
for setKey, add in pairs(finished) do
  if #add > 0 then
    rcall("ZADD", setKey, unpack(add))
  end
end

for _, t in pairs(trims) do
  trimFinished(t[1], t[2], now)
end

local fetched = fetchJobs(now, tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8]),
  {meta[2], meta[3], meta[4], meta[5]})
if #fetched[2] == 0 then
  if delayed then
    addDelayMarker(markerKey, delayedKey)
  end
  if not fetched[1] and not fetched[3] and fetched[4] == 0 and rcall("LLEN", waitKey) == 0 and rcall("LLEN", activeKey) == 0
      and rcall("ZCARD", prioritizedKey) == 0 then
    rcall("XADD", eventsKey, "*", "event", "drained")
  end
end
return {codes, fetched[1], fetched[2], fetched[4]}
