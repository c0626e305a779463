-- advanceScheduler: a worker took a scheduler's run; create the next run.
-- BullMQ's workers do this when they pick a run up (before processing it),
-- so a scheduler keeps going while its runs fail or their worker dies.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 scheduler id, 3 id of the run taken, 4 next run ms for a
--   cron scheduler (ignored for `every`, computed here), 5 now ms, 6 opts
--   JSON of the next run without jobId and delay, 7 the run's repeat.every
--   ms ("" = none; used when the scheduler has no every), 8 the run's
--   repeat.offset ("" = none), 9 priority, 10 lifo ("1"/"0"), 11 the
--   deduplication id in the run's opts ("" = none), stored as "deid".
-- Returns the next run's id; "" when the scheduler is gone or the run taken
--   is not its current one (an old or duplicate pickup), or when the next
--   run exists already (then a duplicated event).
--@include common
--@include queue
--@include scheduler

local schedulerId = ARGV[2]
local producer = ARGV[3]
local nowText = ARGV[5]
local now = tonumber(nowText)

local prevText = rcall("ZSCORE", repeatKey, schedulerId)
if not prevText then
  return ""
end
local prev = tonumber(prevText)
local schedulerKey = repeatKey .. ":" .. schedulerId
local attrs = rcall("HMGET", schedulerKey, "name", "data", "every", "startDate", "offset")
local every = tonumber(attrs[3]) or tonumber(ARGV[7])
local nextMs = tonumber(ARGV[4])
if every then
  local offset = attrs[5] or (ARGV[8] ~= "" and ARGV[8]) or 0
  nextMs = everyNext(prev, every, now, offset, attrs[4] or nil)
end
if not nextMs or producer ~= "repeat:" .. schedulerId .. ":" .. prevText then
  return ""
end

local nextId = "repeat:" .. schedulerId .. ":" .. msText(nextMs)
local maxLen = maxEvents(metaKey)
if rcall("EXISTS", base .. nextId) == 1 then
  rcall("XADD", eventsKey, "MAXLEN", "~", maxLen, "*", "event", "duplicated", "jobId", nextId)
  return ""
end
rcall("ZADD", repeatKey, msText(nextMs), schedulerId)
rcall("HINCRBY", schedulerKey, "ic", 1)
rcall("INCR", idKey)
local delay = math.max(nextMs - now, 0)
addIteration(nextId, schedulerId, attrs[1] or "", attrs[2] or "{}", iterationOpts(ARGV[6], nextId, delay),
  nowText, delay, ARGV[9], ARGV[10] == "1", maxLen, ARGV[11])
return nextId
