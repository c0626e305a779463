-- updateProgress: store a job's progress (JSON) and announce it.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 job id, 3 progress JSON.
-- Returns 0; -1 job missing.
--@include common
--@include queue

local jobKey = base .. ARGV[2]
if rcall("EXISTS", jobKey) == 0 then
  return -1
end
rcall("HSET", jobKey, "progress", ARGV[3])
rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents(metaKey), "*", "event", "progress",
  "jobId", ARGV[2], "data", ARGV[3])
return 0
