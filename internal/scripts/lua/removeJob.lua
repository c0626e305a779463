-- removeJob: delete a job that no worker holds.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 job id.
-- Returns 1 removed; 0 locked by a worker; -1 job missing; -8 the job is the
-- pending iteration of a job scheduler.
--@include common
--@include queue
--@include remove

local id = ARGV[2]
local jobKey = base .. id
if isSchedulerIteration(id, jobKey) then
  return -8
end
if rcall("EXISTS", jobKey .. ":lock") == 1 then
  return 0
end
local prev = removeJob(id)
if not prev then
  return -1
end
rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents(metaKey), "*", "event", "removed", "jobId", id, "prev", prev)
return 1
