-- upsertJobScheduler: create or replace a job scheduler and its next run.
-- Replacing a scheduler whose next run is still waiting (delayed,
-- prioritized or in wait) removes that run and adds the new one; an
-- `every` scheduler whose interval did not change keeps its next run time.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 scheduler id, 3 next run ms for a cron scheduler
--   (ignored for `every`, computed here), 4 now ms, 5 template name,
--   6 every ms ("" = cron), 7 pattern, 8 tz, 9 limit, 10 startDate ms,
--   11 endDate ms, 12 offset ms (7-12: "" = none), 13 template data JSON,
--   14 template opts JSON, 15 opts JSON of the run without jobId and
--   delay, 16 priority, 17 lifo ("1"/"0"), 18 the call token and 19 its
--   ttl ms (include/once.lua: go-redis resends the command when its reply
--   is lost; a second run would find the first run's job taken by a worker
--   meanwhile and the scheduler's next run made, remove that next run and
--   write the first run over the running job, queueing it again).
-- Returns {run id, delay ms}; -10 when a cron run's id is taken by a job
--   that is not the scheduler's waiting run; -11 when 32 consecutive
--   `every` slots are taken; -15 when the scheduler's key (new scheduler)
--   is another job's hash or not a hash.
--@include common
--@include queue
--@include scheduler
--@include once
--@include keytypes

local callKey, early = onceChecked(ARGV[18])
if early then
  return early
end

local schedulerId = ARGV[2]
local nowText = ARGV[4]
local now = tonumber(nowText)
local every = tonumber(ARGV[6])
local startDate = ARGV[10] ~= "" and ARGV[10] or nil
local schedulerKey = repeatKey .. ":" .. schedulerId
local maxLen = maxEvents(metaKey)

local prevText = rcall("ZSCORE", repeatKey, schedulerId)
local prev = tonumber(prevText)
-- A new scheduler's key must be free or a scheduler's hash: with an id
-- "<other>:<ms>" it is the job hash of another scheduler's run
-- ("repeat:<other>:<ms>"), which the HSET below would turn into a
-- scheduler hash, the job losing its data and opts in its list.
if not prev then
  local keyType = rcall("TYPE", schedulerKey)["ok"]
  if keyType ~= "none" and (keyType ~= "hash" or rcall("HEXISTS", schedulerKey, "timestamp") == 1) then
    return -15
  end
end
local offsetArg = ARGV[12] ~= "" and ARGV[12] or nil
local offset = offsetArg
local nextMs = tonumber(ARGV[3])
local everyChanged = false
if every then
  local millis = prev
  if prev and tonumber(rcall("HGET", schedulerKey, "every")) ~= every then
    millis = nil
    everyChanged = true
  end
  nextMs, offset = everyNext(millis, every, now, offsetArg or 0, startDate)
end

-- The scheduler's waiting run is replaced; an active or finished one stays.
local function removeWaitingRun(id)
  local removed = rcall("ZREM", delayedKey, id) == 1 or rcall("ZREM", prioritizedKey, id) == 1 or
    rcall("LREM", waitKey, 1, id) > 0 or rcall("LREM", pausedKey, 1, id) > 0
  if removed then
    removeJobKeys(base .. id)
  end
  return removed
end

local removedRun = false
if prev then
  local runId = "repeat:" .. schedulerId .. ":" .. prevText
  if rcall("EXISTS", base .. runId) == 1 then
    removedRun = removeWaitingRun(runId)
  end
end
local storedOffset = offsetArg
if removedRun then
  if every and not everyChanged then
    nextMs = prev
  end
else
  storedOffset = offset or 0
end

local runId = "repeat:" .. schedulerId .. ":" .. msText(nextMs)
local collision = false
if rcall("EXISTS", base .. runId) == 1 then
  if every then
    local scans = 0
    repeat
      nextMs = nextMs + every
      runId = "repeat:" .. schedulerId .. ":" .. msText(nextMs)
      scans = scans + 1
    until rcall("EXISTS", base .. runId) == 0 or scans >= 32
    if rcall("EXISTS", base .. runId) == 1 then
      return -11
    end
  else
    collision = true
  end
end
if collision and not removedRun then
  return -10
end

local delay = math.max(nextMs - now, 0)

-- Store the scheduler: the zset entry and its hash, rewritten whole, with
-- the iteration count and (when none is given) the offset carried over.
rcall("ZADD", repeatKey, msText(nextMs), schedulerId)
local fields = {"name", ARGV[5]}
local function put(name, value)
  if value and value ~= "" then
    fields[#fields + 1] = name
    fields[#fields + 1] = value
  end
end
put("tz", ARGV[8])
put("limit", ARGV[9])
put("pattern", ARGV[7])
put("startDate", ARGV[10])
put("endDate", ARGV[11])
put("every", ARGV[6])
if storedOffset then
  put("offset", msText(tonumber(storedOffset)))
else
  put("offset", rcall("HGET", schedulerKey, "offset"))
end
if ARGV[14] ~= "{}" then
  put("opts", ARGV[14])
end
if ARGV[13] ~= "{}" then
  put("data", ARGV[13])
end
put("ic", rcall("HGET", schedulerKey, "ic") or "1")
rcall("DEL", schedulerKey)
rcall("HSET", schedulerKey, unpack(fields))

rcall("INCR", idKey)
addIteration(runId, schedulerId, ARGV[5], ARGV[13], iterationOpts(ARGV[15], runId, delay), nowText, delay,
  ARGV[16], ARGV[17] == "1", maxLen)
onceRemember(callKey, {runId, delay}, ARGV[19])
return {runId, delay}
