-- state.lua: where a job is, in BullMQ's getState order (first match wins).
-- Expects these locals in scope: completedKey, failedKey, delayedKey,
-- prioritizedKey, activeKey, waitKey, pausedKey, waitingChildrenKey.

-- jobStateAt is jobState for a job of the queue whose base is qbase
-- (a flow spans queues).
local function jobStateAt(qbase, id)
  for _, s in ipairs({"completed", "failed", "delayed", "prioritized"}) do
    if rcall("ZSCORE", qbase .. s, id) then
      return s
    end
  end
  if rcall("LPOS", qbase .. "active", id) then
    return "active"
  end
  if rcall("LPOS", qbase .. "wait", id) or rcall("LPOS", qbase .. "paused", id) then
    return "waiting"
  end
  if rcall("ZSCORE", qbase .. "waiting-children", id) then
    return "waiting-children"
  end
  return "unknown"
end

local function jobState(id)
  if rcall("ZSCORE", completedKey, id) then
    return "completed"
  end
  if rcall("ZSCORE", failedKey, id) then
    return "failed"
  end
  if rcall("ZSCORE", delayedKey, id) then
    return "delayed"
  end
  if rcall("ZSCORE", prioritizedKey, id) then
    return "prioritized"
  end
  if rcall("LPOS", activeKey, id) then
    return "active"
  end
  if rcall("LPOS", waitKey, id) or rcall("LPOS", pausedKey, id) then
    return "waiting"
  end
  if rcall("ZSCORE", waitingChildrenKey, id) then
    return "waiting-children"
  end
  return "unknown"
end
