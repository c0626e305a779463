-- finishJobs: end the current attempt of a batch of active jobs, then fetch
-- the next jobs for the freed slots, all in one atomic step.
-- Each job needs its lock token; a job whose lock is gone or held by another
-- token, or that is no longer active, is left untouched and reported.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 now ms, 3 fetch count, 4 lock token base, 5 lock duration
--   ms, 6 worker name, 7 worker rate limit max, 8 worker rate limit window ms,
--   9 job count n, then n records of 11 fields:
--   id, token, kind, value, stacktrace JSON ("" = unchanged), attemptsMade
--   after this attempt, keep spec (include/retention.lua), delay ms, lifo
--   ("1"/"0"), attempts allowed, attempt timeline JSON ("" = unchanged).
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
--@include fetch

local now = tonumber(ARGV[2])
local n = tonumber(ARGV[9])
local maxLen = maxEvents(metaKey)
rcall("XTRIM", eventsKey, "MAXLEN", "~", maxLen)
local checkStalled = rcall("EXISTS", stalledKey) == 1
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

for i = 0, n - 1 do
  local o = 9 + i * 11
  local id = ARGV[o + 1]
  local token = ARGV[o + 2]
  local kind = ARGV[o + 3]
  local value = ARGV[o + 4]
  local jobKey = base .. id
  local lockKey = jobKey .. ":lock"
  local code = 0
  local job = rcall("HMGET", jobKey, "name", "priority", "deid")
  if not job[1] then
    code = -1
  else
    local lock = rcall("GET", lockKey)
    if lock ~= token then
      code = lock and -6 or -2
    elseif rcall("LREM", activeKey, -1, id) == 0 then
      code = -3
    end
  end
  codes[#codes + 1] = code
  if code == 0 then
    rcall("DEL", lockKey)
    if checkStalled then
      rcall("SREM", stalledKey, id)
    end
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
      if job[3] then
        releaseDedup(id, job[3])
      end
      local spec = ARGV[o + 7]
      local setKey = kind == "c" and completedKey or failedKey
      if spec == "0" then
        removeJobKeys(jobKey)
      else
        fields[#fields + 1] = kind == "c" and "returnvalue" or "failedReason"
        fields[#fields + 1] = value
        fields[#fields + 1] = "finishedOn"
        fields[#fields + 1] = now
        rcall("HSET", jobKey, unpack(fields))
        if kind == "f" then
          rcall("HDEL", jobKey, "defa")
        end
        rcall("ZADD", setKey, now, id)
        noteTrim(setKey, spec)
      end
      if kind == "c" then
        rcall("XADD", eventsKey, "*", "event", "completed", "jobId", id, "returnvalue", value, "prev", "active")
      else
        rcall("XADD", eventsKey, "*", "event", "failed", "jobId", id, "failedReason", value, "prev", "active")
        if tonumber(atm) >= tonumber(ARGV[o + 10]) then
          rcall("XADD", eventsKey, "*", "event", "retries-exhausted", "jobId", id, "attemptsMade", atm)
        end
      end
    elseif kind == "r" or kind == "w" then
      if #fields > 0 then
        rcall("HSET", jobKey, unpack(fields))
      end
      local priority = tonumber(job[2]) or 0
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
      local delay = tonumber(ARGV[o + 8])
      local due = now + delay
      fields[#fields + 1] = "delay"
      fields[#fields + 1] = delay
      rcall("HSET", jobKey, unpack(fields))
      rcall("ZADD", delayedKey, delayedScore(delayedKey, due), id)
      rcall("XADD", eventsKey, "MAXLEN", "~", maxLen, "*", "event", "delayed", "jobId", id, "delay", due)
      delayed = true
    end
  end
end

for _, t in pairs(trims) do
  trimFinished(t[1], t[2], now)
end

local fetched = fetchJobs(now, tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6], tonumber(ARGV[7]), tonumber(ARGV[8]))
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
