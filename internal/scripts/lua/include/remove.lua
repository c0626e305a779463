-- remove.lua: take a job out of whatever state holds it, with its keys,
-- its deduplication id and its place in a flow.
-- Expects common.lua and queue.lua in scope.
--@include parent

-- isSchedulerIteration is true when the job is a job scheduler's pending
-- iteration (id "repeat:<scheduler>:<next ms>"), which only removing the
-- scheduler may delete.
local function isSchedulerIteration(id, jobKey)
  local rjk = rcall("HGET", jobKey, "rjk")
  if not rjk then
    return false
  end
  local score = rcall("ZSCORE", base .. "repeat", rjk)
  return score ~= false and id == "repeat:" .. rjk .. ":" .. score
end

-- releaseOwnedDedup frees the job's deduplication id, and the next job
-- stored for it, if the job owns it. qbase is the job's queue base
-- (default: this script's queue).
local function releaseOwnedDedup(id, jobKey, qbase)
  qbase = qbase or base
  local deid = rcall("HGET", jobKey, "deid")
  if deid then
    local dedupKey = qbase .. "de:" .. deid
    if rcall("GET", dedupKey) == id then
      rcall("DEL", dedupKey, qbase .. "dn:" .. deid)
    end
  end
end

-- dropJob deletes a job whose id the caller takes out of its state itself
-- (drain, clean, obliterate): detached from its parent the hard way, its
-- deduplication id released, its keys deleted.
local function dropJob(id)
  local jobKey = base .. id
  detachFromParent(jobKey, nil, true)
  releaseOwnedDedup(id, jobKey)
  removeJobKeys(jobKey)
end

-- removeFromAnyState removes the id from the first state of the queue at
-- qbase that holds it, in BullMQ's order, and returns that state's raw name
-- ("unknown" when none did).
local function removeFromAnyState(qbase, id)
  for _, s in ipairs({"completed", "waiting-children", "delayed", "failed", "prioritized"}) do
    if rcall("ZREM", qbase .. s, id) == 1 then
      return s
    end
  end
  for _, l in ipairs({"wait", "paused", "active"}) do
    if rcall("LREM", qbase .. l, 1, id) > 0 then
      return l
    end
  end
  return "unknown"
end

-- treeLocked is true when the job, or any child it still waits for
-- (recursively, across queues), is held by a worker.
local treeLocked
treeLocked = function(jobKey)
  if rcall("EXISTS", jobKey .. ":lock") == 1 then
    return true
  end
  for _, childKey in ipairs(rcall("SMEMBERS", jobKey .. ":dependencies")) do
    if treeLocked(childKey) then
      return true
    end
  end
  return false
end

-- removeWithChildren deletes a job and, depth first, every child it
-- recorded (processed, failed, unsuccessful, pending), each in its own
-- queue: BullMQ's Job.remove with removeChildren. parentKey is the parent
-- being removed when called for a child, else nil. keepChildren deletes
-- the job alone (removeChildren false): its children stay where they are,
-- their parent fields still naming it. Each deleted job gets a removed
-- event in its queue.
local removeWithChildren
local removeChildrenOf
removeWithChildren = function(qbase, id, parentKey, keepChildren)
  local jobKey = qbase .. id
  detachFromParent(jobKey, parentKey, false)
  if not keepChildren then
    removeChildrenOf(jobKey)
  end
  local prev = removeFromAnyState(qbase, id)
  releaseOwnedDedup(id, jobKey, qbase)
  if removeJobKeys(jobKey) > 0 then
    rcall("XADD", qbase .. "events", "MAXLEN", "~", maxEvents(qbase .. "meta"), "*", "event", "removed",
      "jobId", id, "prev", prev)
  end
end

-- removeChildrenOf deletes, depth first, every child jobKey recorded.
removeChildrenOf = function(jobKey)
  local children = {}
  local processed = rcall("HGETALL", jobKey .. ":processed")
  for i = 1, #processed, 2 do
    children[#children + 1] = processed[i]
  end
  local failed = rcall("HGETALL", jobKey .. ":failed")
  for i = 1, #failed, 2 do
    children[#children + 1] = failed[i]
  end
  for _, k in ipairs(rcall("ZRANGE", jobKey .. ":unsuccessful", 0, -1)) do
    children[#children + 1] = k
  end
  for _, k in ipairs(children) do
    local cid, cbase = splitJobKey(k)
    removeWithChildren(cbase, cid, jobKey, false)
  end
  -- Pending children last, read after the others went: removing one can
  -- change the set.
  for _, k in ipairs(rcall("SMEMBERS", jobKey .. ":dependencies")) do
    local cid, cbase = splitJobKey(k)
    removeWithChildren(cbase, cid, jobKey, false)
  end
end
