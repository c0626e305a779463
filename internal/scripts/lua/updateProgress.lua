-- updateProgress: store a job's progress (JSON) and announce it.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 job id, 3 progress JSON, 4 the call token and 5 its ttl
--   ms (include/once.lua: go-redis resends the command when its reply is
--   lost, and a second run would write a second "progress" event).
-- Returns 0; -1 job missing.
--@include common
--@include queue
--@include once

local callKey, first = onceReply(base, ARGV[4])
if first then
  return first
end

local jobKey = base .. ARGV[2]
if rcall("EXISTS", jobKey) == 0 then
  return -1
end
rcall("HSET", jobKey, "progress", ARGV[3])
rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents(metaKey), "*", "event", "progress",
  "jobId", ARGV[2], "data", ARGV[3])
onceRemember(callKey, 0, ARGV[5])
return 0
