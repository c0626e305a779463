-- moveToWaitingChildren: park an active job in waiting-children while
-- children it added at run time are pending (BullMQ's
-- Job.moveToWaitingChildren). The worker that holds the job's lock calls
-- it from the processor; the job leaves active and gives up its lock, and
-- the last child to finish releases it as it releases any flow parent.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 job id, 3 lock token, 4 child key ("" = any pending
--   child; else wait only if that child is pending), 5 now ms, 6 the
--   attempt timeline JSON with this attempt recorded, stored when the job
--   moves ("" = unchanged).
-- Returns 0 moved; 1 nothing to wait for (the job stays active and
--   locked); -1 job missing; -2 lock missing; -6 lock held by another
--   token; -3 job not active; -9 a child failed with failParentOnFailure.
-- The lock is checked before the job is touched, as in BullMQ; a job with
-- nothing to wait for is not checked further (BullMQ answers 1 there too).
--@include common
--@include queue

local id = ARGV[2]
local jobKey = base .. id
if rcall("EXISTS", jobKey) == 0 then
  return -1
end
if rcall("ZCARD", jobKey .. ":unsuccessful") > 0 then
  return -9
end
local deps = jobKey .. ":dependencies"
local pending
if ARGV[4] ~= "" then
  pending = rcall("SISMEMBER", deps, ARGV[4]) == 1
else
  pending = rcall("SCARD", deps) > 0
end
if not pending then
  return 1
end
local lock = rcall("GET", jobKey .. ":lock")
if lock ~= ARGV[3] then
  if lock then
    return -6
  end
  return -2
end
-- The lock goes first: BullMQ removes it before it looks at active, so a
-- job not active loses it too.
rcall("DEL", jobKey .. ":lock")
rcall("SREM", stalledKey, id)
if rcall("LREM", activeKey, -1, id) == 0 then
  return -3
end
rcall("ZADD", waitingChildrenKey, ARGV[5], id)
if ARGV[6] ~= "" then
  rcall("HSET", jobKey, "drover.attempts", ARGV[6])
end
rcall("XADD", eventsKey, "*", "event", "waiting-children", "jobId", id, "prev", "active")
return 0
