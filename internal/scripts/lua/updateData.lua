-- updateData: replace a job's data (JSON), as BullMQ's Job.updateData does:
-- no event, no size check.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 job id, 3 data JSON.
-- Returns 0; -1 job missing.
--@include common
--@include queue

local jobKey = base .. ARGV[2]
if rcall("EXISTS", jobKey) == 0 then
  return -1
end
rcall("HSET", jobKey, "data", ARGV[3])
return 0
