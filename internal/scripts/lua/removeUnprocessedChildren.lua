-- removeUnprocessedChildren: delete the children a flow parent still waits
-- for, with the children they wait for in turn, each in its own queue
-- (BullMQ's Job.removeUnprocessedChildren). A child a worker holds, or one
-- in its queue's failed set, is left where it is with its own children.
-- Each deleted child is detached from its parent first, so a parent left
-- with no pending child moves from waiting-children to wait with a waiting
-- event, as on any removal; each gets a removed event.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 job id, 3 the call token and 4 its ttl ms
--   (include/once.lua: go-redis resends the command when its reply is
--   lost, and a second run would find the children gone and answer 0).
-- Returns the number of jobs deleted; -1 job missing (codes:
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
local removed = 0
local removePending
removePending = function(qbase, id, parentKey)
  local key = qbase .. id
  if rcall("EXISTS", key .. ":lock") == 1 or rcall("ZSCORE", qbase .. "failed", id) then
    return
  end
  detachFromParent(key, parentKey, false)
  for _, k in ipairs(rcall("SMEMBERS", key .. ":dependencies")) do
    local cid, cbase = splitJobKey(k)
    removePending(cbase, cid, key)
  end
  local prev = removeFromAnyState(qbase, id)
  releaseOwnedDedup(id, key, qbase)
  if removeJobKeys(key) > 0 then
    removed = removed + 1
    rcall("XADD", qbase .. "events", "MAXLEN", "~", maxEvents(qbase .. "meta"), "*", "event", "removed",
      "jobId", id, "prev", prev)
  end
end
for _, k in ipairs(rcall("SMEMBERS", jobKey .. ":dependencies")) do
  local cid, cbase = splitJobKey(k)
  removePending(cbase, cid, jobKey)
end
onceRemember(callKey, removed, ARGV[4])
return removed
