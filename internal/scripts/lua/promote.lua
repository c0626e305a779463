-- promote: run a delayed job now, optionally with fresh attempt counters
-- (the "retry now" of a job waiting for its backoff).
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 job id, 3 reset attemptsMade ("1"/"0"), 4 reset
--   attemptsStarted ("1"/"0"), 5 the call token and 6 its ttl ms
--   (include/once.lua: go-redis resends the command when its reply is
--   lost, and a second run would refuse the job the first run moved),
--   7 now ms (the time of the boundary a reset leaves in the attempt
--   timeline, include/fresh.lua).
-- Returns 0; -1 job missing; -3 job not delayed.
--@include common
--@include queue
--@include once
--@include keytypes
--@include fresh

local callKey, early = onceChecked(ARGV[5])
if early then
  return early
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
if rcall("ZREM", delayedKey, id) == 0 then
  return -3
end
local priority = jobPriority(rcall("HGET", jobKey, "priority"))
pushReady(waitKey, prioritizedKey, pcKey, id, priority, false)
addBaseMarker(markerKey, pausedOrMaxed(metaKey, activeKey))
rcall("XADD", eventsKey, "*", "event", "waiting", "jobId", id, "prev", "delayed")
rcall("HSET", jobKey, "delay", 0)
freshBoundary(jobKey, "delayed", ARGV[3], ARGV[4], ARGV[7])
if ARGV[3] == "1" then
  rcall("HDEL", jobKey, "atm")
end
if ARGV[4] == "1" then
  rcall("HDEL", jobKey, "ats")
end
onceRemember(callKey, 0, ARGV[6])
return 0
