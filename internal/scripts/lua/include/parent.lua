-- parent.lua: bookkeeping for a BullMQ flow parent when one of its children
-- finishes, so a drover worker can process children of flows added by Node
-- BullMQ. Parent keys are built from the child's `parent` field; in a Redis
-- Cluster the parent's queue must share the child's hash tag (BullMQ's own
-- rule for flows). Expects common.lua in scope.

-- releaseParent moves a parent that no longer waits for children to where
-- it runs next: delayed (if it has a delay), wait (front) or prioritized.
local function releaseParent(parentQueueKey, parentKey, parentId, now)
  local attrs = rcall("HMGET", parentKey, "priority", "delay")
  local priority = jobPriority(attrs[1])
  local delay = tonumber(attrs[2]) or 0
  local events = parentQueueKey .. ":events"
  local marker = parentQueueKey .. ":marker"
  if delay > 0 then
    local due = now + delay
    local delayed = parentQueueKey .. ":delayed"
    rcall("ZADD", delayed, delayedScoreOf(due, 0), parentId)
    rcall("XADD", events, "*", "event", "delayed", "jobId", parentId, "delay", due)
    addDelayMarker(marker, delayed)
    return
  end
  local blocked = pausedOrMaxed(parentQueueKey .. ":meta", parentQueueKey .. ":active")
  if priority == 0 then
    rcall("RPUSH", parentQueueKey .. ":wait", parentId)
  else
    rcall("ZADD", parentQueueKey .. ":prioritized",
      priorityScore(parentQueueKey .. ":prioritized", parentQueueKey .. ":pc", priority), parentId)
  end
  addBaseMarker(marker, blocked)
  rcall("XADD", events, "*", "event", "waiting", "jobId", parentId, "prev", "waiting-children")
end

-- releaseIfWaiting releases the parent if it is in waiting-children.
local function releaseIfWaiting(parentQueueKey, parentKey, parentId, now)
  if rcall("ZREM", parentQueueKey .. ":waiting-children", parentId) == 1 then
    releaseParent(parentQueueKey, parentKey, parentId, now)
  end
end

-- parentOf reads a job's parent: key, id, queue key and failure flags.
local function parentOf(jobKey)
  local f = rcall("HMGET", jobKey, "parentKey", "parent")
  if not f[1] or f[1] == "" then
    return nil
  end
  if not f[2] then
    -- A child stored with a parentKey alone (as BullMQ stored children
    -- before the failure policies): the parent's id and queue come from
    -- the key, as BullMQ's moveToFinished reads them then, and there is no
    -- policy. Without this its completion never reached the parent, which
    -- waited in waiting-children for good.
    local id = string.match(f[1], ".*:(.*)")
    if not id or id == "" then
      return nil
    end
    return {key = f[1], id = id, queueKey = string.sub(f[1], 1, #f[1] - #id - 1)}
  end
  local ok, p = pcall(cjson.decode, f[2])
  if not ok or type(p) ~= "table" or not p["id"] or not p["queueKey"] then
    return nil
  end
  p.key = f[1]
  return p
end

-- childCompleted records a completed child's return value in its parent and
-- releases the parent when it was the last pending child. p is parentOf's.
local function childCompleted(p, jobKey, returnvalue, now)
  if rcall("EXISTS", p.key) == 0 then
    return
  end
  local deps = p.key .. ":dependencies"
  if rcall("SREM", deps, jobKey) == 1 then
    rcall("HSET", p.key .. ":processed", jobKey, returnvalue)
    if rcall("SCARD", deps) == 0 then
      releaseIfWaiting(p.queueKey, p.key, p.id, now)
    end
  end
end

-- childFailed applies the child's failure policy to its parent (BullMQ's
-- failParentOnFailure, continueParentOnFailure, ignoreDependencyOnFailure,
-- removeDependencyOnFailure). Without one, the parent keeps waiting.
local function childFailed(p, jobKey, reason, now)
  if rcall("EXISTS", p.key) == 0 then
    return
  end
  local deps = p.key .. ":dependencies"
  if p["fpof"] then
    if rcall("SREM", deps, jobKey) == 1 then
      rcall("ZADD", p.key .. ":unsuccessful", now, jobKey)
      local fromDelayed = rcall("ZREM", p.queueKey .. ":delayed", p.id) == 1
      if fromDelayed then
        rcall("HSET", p.key, "delay", 0)
      end
      local waiting = rcall("ZREM", p.queueKey .. ":waiting-children", p.id) == 1
      if fromDelayed or waiting then
        rcall("HSET", p.key, "defa", "child " .. jobKey .. " failed")
        releaseParent(p.queueKey, p.key, p.id, now)
      elseif not rcall("ZSCORE", p.queueKey .. ":failed", p.id) then
        -- A parent that already failed for good gets no deferred failure:
        -- it would fail its next retry at once without running (BullMQ
        -- leaves it alone too).
        rcall("HSET", p.key, "defa", "child " .. jobKey .. " failed")
      end
    end
  elseif p["cpof"] then
    if rcall("SREM", deps, jobKey) == 1 then
      rcall("HSET", p.key .. ":failed", jobKey, reason)
      releaseIfWaiting(p.queueKey, p.key, p.id, now)
    end
  elseif p["idof"] or p["rdof"] then
    if rcall("SREM", deps, jobKey) == 1 then
      if p["idof"] then
        rcall("HSET", p.key .. ":failed", jobKey, reason)
      end
      if rcall("SCARD", deps) == 0 then
        releaseIfWaiting(p.queueKey, p.key, p.id, now)
      end
    end
  end
end

-- splitJobKey splits a full job key into its id (what follows the last
-- ':') and the "<prefix>:<queue>:" base of its queue, as BullMQ reads the
-- keys it stores in parentKey and in a parent's child sets.
local function splitJobKey(jobKey)
  local id = string.match(jobKey, ".*:(.*)")
  return id, string.sub(jobKey, 1, #jobKey - #id)
end

-- pushParentToWait is the release a removal gives a parent: the front of its
-- queue's wait list whatever its priority or delay (BullMQ's removal path
-- differs from a child's completion here), with the waiting event unless
-- the removal is a silent, hard one.
local function pushParentToWait(parentBase, parentId, withEvent)
  local blocked = pausedOrMaxed(parentBase .. "meta", parentBase .. "active")
  rcall("RPUSH", parentBase .. "wait", parentId)
  addBaseMarker(parentBase .. "marker", blocked)
  if withEvent then
    rcall("XADD", parentBase .. "events", "*", "event", "waiting", "jobId", parentId, "prev", "waiting-children")
  end
end

-- detachFromParent takes a job that is being deleted out of its parent's
-- pending dependencies, so the parent does not wait for it forever. When it
-- was the last one and the parent is in waiting-children: a soft removal
-- (Job.Remove, retention) moves the parent to wait with an event; a hard
-- one (drain, clean, obliterate) deletes a parent of the same queue too,
-- and moves a parent of another queue to wait without an event. These are
-- BullMQ's rules. parentKey is the caller's when it knows it (no existence
-- check then); nil reads it from the job, which then needs a live parent.
-- Returns true when the job was a pending dependency.
local detachFromParent
detachFromParent = function(jobKey, parentKey, hard)
  local readParent = not parentKey
  if readParent then
    -- One HGET: retention trims call this for every trimmed job.
    parentKey = rcall("HGET", jobKey, "parentKey")
    if not parentKey or parentKey == "" or rcall("EXISTS", parentKey) == 0 then
      return false
    end
  end
  local deps = parentKey .. ":dependencies"
  if rcall("SREM", deps, jobKey) == 0 then
    return false
  end
  if rcall("SCARD", deps) == 0 then
    local parentId, parentBase = splitJobKey(parentKey)
    if rcall("ZREM", parentBase .. "waiting-children", parentId) == 1 then
      if not hard then
        pushParentToWait(parentBase, parentId, true)
      elseif parentBase == base then
        detachFromParent(parentKey, nil, true)
        removeJobKeys(parentKey)
        -- BullMQ drops the de: key named by the child's deduplication id
        -- here; kept for identical state.
        local deid = readParent and rcall("HGET", jobKey, "deid")
        if deid then
          rcall("DEL", parentBase .. "de:" .. deid)
        end
      else
        pushParentToWait(parentBase, parentId, false)
      end
    end
  end
  return true
end

-- moveChildBack puts a finished child that runs again back into its
-- parent's pending dependencies, out of the set that recorded how it
-- ended (processed value, failure). A parent that already left
-- waiting-children stays where it is, as in BullMQ; it cannot complete
-- until the child finishes again.
local function moveChildBack(jobKey, prevState)
  local parentKey = rcall("HGET", jobKey, "parentKey")
  if not parentKey or rcall("EXISTS", parentKey) == 0 then
    return
  end
  local back
  if prevState == "failed" then
    back = rcall("ZREM", parentKey .. ":unsuccessful", jobKey) == 1 or
      rcall("HDEL", parentKey .. ":failed", jobKey) == 1
  else
    back = rcall("HDEL", parentKey .. ":processed", jobKey) == 1
  end
  if back then
    rcall("SADD", parentKey .. ":dependencies", jobKey)
  end
end
