-- changeDelay: move a delayed job's due time to now + delay.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 job id, 3 now ms, 4 delay ms, 5 the call token and 6
--   its ttl ms (include/once.lua: go-redis resends the command when its
--   reply is lost, and a second run would write a second "delayed" event
--   and move the due time again).
-- Returns 0; -1 job missing; -3 job not delayed.
--@include common
--@include queue
--@include keytypes
--@include once

local wrongType = wrongTypeQueueKey()
if wrongType then
  return wrongType
end

local callKey, first = onceReply(base, ARGV[5])
if first then
  return first
end

local id = ARGV[2]
local jobKey = base .. id
local wrongJob = wrongTypeJob(jobKey)
if wrongJob then
  return wrongJob
end
if rcall("EXISTS", jobKey) == 0 then
  return -1
end
local delay = tonumber(ARGV[4])
local due = tonumber(ARGV[3]) + delay
local score = delayedScore(delayedKey, due)
if rcall("ZREM", delayedKey, id) == 0 then
  return -3
end
rcall("HSET", jobKey, "delay", delay)
rcall("ZADD", delayedKey, score, id)
rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents(metaKey), "*", "event", "delayed", "jobId", id, "delay", due)
addDelayMarker(markerKey, delayedKey)
onceRemember(callKey, 0, ARGV[6])
return 0
