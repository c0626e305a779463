-- moveJobsToWait: bulk re-run of failed or completed jobs (BullMQ retryJobs)
-- and bulk promotion of delayed jobs (promoteJobs), one chunk per call.
-- Priorities are ignored: every job goes to wait, as in BullMQ. Re-run flow
-- children go back into their parents' pending dependencies.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 state ("failed"|"completed"|"delayed"), 3 count, 4 cut-off
--   ms (jobs finished at or before it; ignored for delayed), 5 reset
--   attemptsMade ("1"/"0"), 6 the call token and 7 its ttl ms
--   (include/once.lua: a resend after a lost reply answers the first run's
--   ids; a second run would move the next chunk and lose the first from the
--   count, and a bounded promotion would move twice its bound), 8 reset
--   attemptsStarted ("1"/"0"), 9 now ms (the time of the boundary a reset
--   leaves in the attempt timeline, include/fresh.lua).
-- Returns {more (1 when count was used up and more may remain), moved ids}.
--@include common
--@include queue
--@include parent
--@include once
--@include keytypes
--@include fresh

local callKey, early = onceChecked(ARGV[6])
if early then
  return early
end

local state = ARGV[2]
local count = tonumber(ARGV[3])
local setKey, maxScore = delayedKey, "+inf"
if state == "failed" then
  setKey, maxScore = failedKey, ARGV[4]
elseif state == "completed" then
  setKey, maxScore = completedKey, ARGV[4]
end
local ids = rcall("ZRANGEBYSCORE", setKey, "-inf", maxScore, "LIMIT", 0, count)
if #ids == 0 then
  return {0, {}}
end
local maxLen = maxEvents(metaKey)
for _, id in ipairs(ids) do
  local jobKey = base .. id
  if state == "failed" then
    rcall("HDEL", jobKey, "finishedOn", "processedOn", "failedReason")
    moveChildBack(jobKey, state)
  elseif state == "completed" then
    rcall("HDEL", jobKey, "finishedOn", "processedOn", "returnvalue")
    moveChildBack(jobKey, state)
  end
  freshBoundary(jobKey, state, ARGV[5], ARGV[8], ARGV[9])
  if ARGV[5] == "1" then
    rcall("HDEL", jobKey, "atm")
  end
  if ARGV[8] == "1" then
    rcall("HDEL", jobKey, "ats")
  end
  rcall("XADD", eventsKey, "MAXLEN", "~", maxLen, "*", "event", "waiting", "jobId", id, "prev", state)
end
for from = 1, #ids, 7000 do
  local to = math.min(from + 6999, #ids)
  rcall("ZREM", setKey, unpack(ids, from, to))
  rcall("LPUSH", waitKey, unpack(ids, from, to))
end
addBaseMarker(markerKey, pausedOrMaxed(metaKey, activeKey))
local more = 0
if #ids == count then
  more = 1
end
onceRemember(callKey, {more, ids}, ARGV[7])
return {more, ids}
