-- removeChildDependency: take a flow child out of its parent's pending
-- dependencies and forget its parent, so the parent no longer waits for it
-- (BullMQ's Job.removeChildDependency). When it was the last one and the
-- parent is in waiting-children, the parent goes to its queue's wait list
-- with a waiting event, as a child's removal releases it. The parent is
-- read from the job's own parentKey field.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 job id, 3 the call token and 4 its ttl ms
--   (include/once.lua: go-redis resends the command when its reply is
--   lost, and a second run would find no parent, the first run having
--   deleted the job's parentKey).
-- Returns 1 detached; 0 the job was no longer a pending dependency (it
-- finished, or was detached before), nothing changed; -1 job missing; -5
-- the job names no parent, or its parent is gone (codes:
-- internal/scripts/errors.go).
--@include common
--@include queue
--@include remove
--@include once
--@include keytypes

local callKey, early = onceChecked(ARGV[3])
if early then
  return early
end

local jobKey = base .. ARGV[2]
if rcall("EXISTS", jobKey) == 0 then
  return -1
end
local parentKey = rcall("HGET", jobKey, "parentKey")
if not parentKey or parentKey == "" or rcall("EXISTS", parentKey) == 0 then
  return -5
end
if detachFromParent(jobKey, parentKey, false) then
  rcall("HDEL", jobKey, "parentKey", "parent")
  onceRemember(callKey, 1, ARGV[4])
  return 1
end
return 0
