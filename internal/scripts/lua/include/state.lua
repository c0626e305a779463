-- state.lua: where a job is, in BullMQ's getState order (first match wins).
-- Expects these locals in scope: base, completedKey, failedKey, delayedKey,
-- prioritizedKey, activeKey, waitingChildrenKey.
--
-- The wait and paused lists are never searched: LPOS is O(n) (about 25 ms
-- of Redis time per lookup at 1M waiting jobs, for every duplicate add or
-- GetJobState). The sorted sets answer by ZSCORE, the active list is short
-- (one entry per running job), and a job whose hash exists and is in none
-- of them can only be in wait or paused, which BullMQ reports as waiting
-- either way. Only a job hash no script left in any list (none of
-- BullMQ's or drover's do) would read as waiting here and unknown in
-- BullMQ's getState.

-- isJobHash: key holds a job (every job hash has a timestamp), not a queue
-- key of the same name ("meta", "id", "events": ids no add accepts).
local function isJobHash(key)
  return rcall("TYPE", key)["ok"] == "hash" and rcall("HEXISTS", key, "timestamp") == 1
end

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
  if rcall("ZSCORE", qbase .. "waiting-children", id) then
    return "waiting-children"
  end
  if isJobHash(qbase .. id) then
    return "waiting"
  end
  return "unknown"
end

-- jobState: where job id is. fields, when given, is its hash as HGETALL
-- returned it in the same script: a job without finishedOn is in neither
-- completed nor failed (every step that puts a job there, BullMQ's and
-- drover's, writes it), which saves a duplicate add of a live job two
-- lookups; and the last check reads the hash instead of asking Redis (TYPE
-- and HEXISTS).
local function jobState(id, fields)
  local finished, stored = true, nil
  if fields then
    finished, stored = false, false
    for i = 1, #fields, 2 do
      local f = fields[i]
      if f == "finishedOn" then
        finished = true
      elseif f == "timestamp" then
        stored = true
      end
    end
  end
  if finished then
    if rcall("ZSCORE", completedKey, id) then
      return "completed"
    end
    if rcall("ZSCORE", failedKey, id) then
      return "failed"
    end
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
  if rcall("ZSCORE", waitingChildrenKey, id) then
    return "waiting-children"
  end
  if stored == nil then
    stored = isJobHash(base .. id)
  end
  if stored then
    return "waiting"
  end
  return "unknown"
end
