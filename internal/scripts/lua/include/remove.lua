-- remove.lua: take a job out of whatever state holds it, with its keys.
-- Expects common.lua, queue.lua and state key locals in scope.

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

-- releaseOwnedDedup frees the job's deduplication id if the job owns it.
local function releaseOwnedDedup(id, jobKey)
  local deid = rcall("HGET", jobKey, "deid")
  if deid then
    local dedupKey = base .. "de:" .. deid
    if rcall("GET", dedupKey) == id then
      rcall("DEL", dedupKey, base .. "dn:" .. deid)
    end
  end
end

-- removeFromState removes the id from the first state that holds it and
-- returns that state's raw name ("unknown" when none did).
local function removeFromState(id)
  local sets = {{"completed", completedKey}, {"waiting-children", waitingChildrenKey},
    {"delayed", delayedKey}, {"failed", failedKey}, {"prioritized", prioritizedKey}}
  for _, s in ipairs(sets) do
    if rcall("ZREM", s[2], id) == 1 then
      return s[1]
    end
  end
  local lists = {{"wait", waitKey}, {"paused", pausedKey}, {"active", activeKey}}
  for _, l in ipairs(lists) do
    if rcall("LREM", l[2], 1, id) > 0 then
      return l[1]
    end
  end
  return "unknown"
end

-- removeJob deletes a job wherever it is. Returns the state it was in, or
-- false when the job hash did not exist and no state held it.
local function removeJob(id)
  local jobKey = base .. id
  local exists = rcall("EXISTS", jobKey) == 1
  local prev = removeFromState(id)
  if exists then
    releaseOwnedDedup(id, jobKey)
    removeJobKeys(jobKey)
  end
  if not exists and prev == "unknown" then
    return false
  end
  return prev
end
