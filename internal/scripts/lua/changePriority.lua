-- changePriority: give a job a new priority; a waiting job is re-queued in the
-- place the new priority gives it, other states keep it for their next move.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 job id, 3 priority, 4 lifo ("1"/"0"), 5 the call token
--   and 6 its ttl ms (include/once.lua: go-redis resends the command when
--   its reply is lost, and a second run would take a second priority
--   counter (pc) and move the job behind its new peers again).
-- Returns 0; -1 job missing.
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
local priority = tonumber(ARGV[3])
local lifo = ARGV[4] == "1"
if rcall("ZREM", prioritizedKey, id) > 0 or rcall("LREM", waitKey, -1, id) > 0 then
  local blocked = pausedOrMaxed(metaKey, activeKey)
  if priority == 0 then
    pushReady(waitKey, prioritizedKey, pcKey, id, 0, lifo)
    addBaseMarker(markerKey, blocked)
  elseif lifo then
    rcall("ZADD", prioritizedKey, priorityScoreOf(priority, 0), id)
  else
    pushReady(waitKey, prioritizedKey, pcKey, id, priority, false)
    addBaseMarker(markerKey, blocked)
  end
end
rcall("HSET", jobKey, "priority", priority)
onceRemember(callKey, 0, ARGV[6])
return 0
