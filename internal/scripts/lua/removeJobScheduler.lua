-- removeJobScheduler: delete a job scheduler and its delayed next run (a
-- run already waiting, active or finished is left alone, as BullMQ does).
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 scheduler id, 3 the call token and 4 its ttl ms
--   (include/once.lua: go-redis's resend after a lost reply gets the first
--   run's answer, not 0 for the scheduler it removed).
-- Returns 1 when the scheduler existed, 0 when not.
--@include common
--@include queue
--@include scheduler
--@include once
--@include keytypes

local callKey, early = onceChecked(ARGV[3])
if early then
  return early
end

local schedulerId = ARGV[2]
local nextText = rcall("ZSCORE", repeatKey, schedulerId)
if nextText then
  local runId = "repeat:" .. schedulerId .. ":" .. nextText
  if rcall("ZREM", delayedKey, runId) == 1 then
    removeJobKeys(base .. runId)
    rcall("XADD", eventsKey, "*", "event", "removed", "jobId", runId, "prev", "delayed")
  end
end
if rcall("ZREM", repeatKey, schedulerId) == 1 then
  rcall("DEL", repeatKey .. ":" .. schedulerId)
  onceRemember(callKey, 1, ARGV[4])
  return 1
end
return 0
