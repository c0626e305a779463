-- parent.lua: bookkeeping for a BullMQ flow parent when one of its children
-- finishes, so a drover worker can process children of flows added by Node
-- BullMQ. Parent keys are built from the child's `parent` field; in a Redis
-- Cluster the parent's queue must share the child's hash tag (BullMQ's own
-- rule for flows). Expects common.lua in scope.

-- releaseParent moves a parent that no longer waits for children to where
-- it runs next: delayed (if it has a delay), wait (front) or prioritized.
local function releaseParent(parentQueueKey, parentKey, parentId, now)
  local attrs = rcall("HMGET", parentKey, "priority", "delay")
  local priority = tonumber(attrs[1]) or 0
  local delay = tonumber(attrs[2]) or 0
  local events = parentQueueKey .. ":events"
  local marker = parentQueueKey .. ":marker"
  if delay > 0 then
    local due = now + delay
    local delayed = parentQueueKey .. ":delayed"
    rcall("ZADD", delayed, due * 4096, parentId)
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
  if not f[1] or not f[2] then
    return nil
  end
  local ok, p = pcall(cjson.decode, f[2])
  if not ok or type(p) ~= "table" or not p["id"] or not p["queueKey"] then
    return nil
  end
  p.key = f[1]
  return p
end

-- childCompleted records a completed child's return value in its parent and
-- releases the parent when it was the last pending child.
local function childCompleted(jobKey, returnvalue, now)
  local p = parentOf(jobKey)
  if not p or rcall("EXISTS", p.key) == 0 then
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
local function childFailed(jobKey, reason, now)
  local p = parentOf(jobKey)
  if not p or rcall("EXISTS", p.key) == 0 then
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
      rcall("HSET", p.key, "defa", "child " .. jobKey .. " failed")
      if fromDelayed or waiting then
        releaseParent(p.queueKey, p.key, p.id, now)
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
