-- drain: delete every job that waits to run (wait, legacy paused, prioritized
-- and, when asked, delayed), except a job scheduler's pending iteration.
-- Active, completed and failed jobs are untouched. No events, as BullMQ.
-- A drained flow child leaves its parent's dependencies (include/parent.lua,
-- detachFromParent, hard).
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 include delayed ("1"/"0"), 3 the call token and 4 its ttl
--   ms (include/once.lua: a resend after a lost reply answers the first
--   run's reply instead of 0), 5 how many of the deleted jobs' ids to name.
-- Returns {the number of jobs deleted, the ids of the first ARGV[5] of
-- them, in the order they were deleted}.
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
local named, nameMax = {}, tonumber(ARGV[5]) or 0
local function dropped(id)
  dropJob(id)
  removed = removed + 1
  if #named < nameMax then
    named[#named + 1] = id
  end
end
local function drainList(key)
  local ids = rcall("LRANGE", key, 0, -1)
  local keep = {}
  for _, id in ipairs(ids) do
    if isSchedulerIteration(id, base .. id) then
      keep[#keep + 1] = id
    else
      dropped(id)
    end
  end
  rcall("DEL", key)
  inChunks("RPUSH", key, keep, 7000)
end

local function drainSet(key)
  local ids = rcall("ZRANGE", key, 0, -1)
  for _, id in ipairs(ids) do
    if not isSchedulerIteration(id, base .. id) then
      dropped(id)
      rcall("ZREM", key, id)
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
local reply = {removed, named}
onceRemember(callKey, reply, ARGV[4])
return reply
