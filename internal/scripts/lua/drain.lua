-- drain: delete every job that waits to run (wait, legacy paused, prioritized
-- and, when asked, delayed), except a job scheduler's pending iteration.
-- Active, completed and failed jobs are untouched. No events, as BullMQ.
-- A drained flow child leaves its parent's dependencies (include/parent.lua,
-- detachFromParent, hard).
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 include delayed ("1"/"0"), 3 the call token and 4 its ttl
--   ms (include/once.lua: a resend after a lost reply answers the first
--   run's count instead of 0).
-- Returns the number of jobs deleted.
--@include common
--@include queue
--@include remove
--@include once
--@include keytypes

local callKey, early = onceChecked(ARGV[3])
if early then
  return early
end

local removed = 0
local function drainList(key)
  local ids = rcall("LRANGE", key, 0, -1)
  local keep = {}
  for _, id in ipairs(ids) do
    if isSchedulerIteration(id, base .. id) then
      keep[#keep + 1] = id
    else
      dropJob(id)
      removed = removed + 1
    end
  end
  rcall("DEL", key)
  inChunks("RPUSH", key, keep, 7000)
end

local function drainSet(key)
  local ids = rcall("ZRANGE", key, 0, -1)
  for _, id in ipairs(ids) do
    if not isSchedulerIteration(id, base .. id) then
      dropJob(id)
      rcall("ZREM", key, id)
      removed = removed + 1
    end
  end
end

-- BullMQ's order, which decides which drained child releases a parent.
drainList(waitKey)
drainList(pausedKey)
if ARGV[2] == "1" then
  drainSet(delayedKey)
end
-- The priority counter (pc) stays, as in BullMQ: a fetch that finds
-- prioritized empty deletes it.
drainSet(prioritizedKey)
onceRemember(callKey, removed, ARGV[4])
return removed
