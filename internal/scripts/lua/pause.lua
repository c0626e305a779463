-- pause: pause or resume a queue. Paused (v6 style): jobs stay in wait, workers stop
-- taking them, and no wake-up markers are written.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 "pause" or "resume", 3 the call token and 4 its ttl ms
--   (include/once.lua: go-redis resends the command when its reply is
--   lost, and a second run would write the event again).
-- Returns 1 when the state changed, 0 when it already was so (events are
-- written either way, as BullMQ does).
--@include common
--@include queue
--@include keytypes
--@include once

local callKey, first = onceReply(base, ARGV[3])
if first then
  return first
end

if ARGV[2] == "pause" then
  -- Only the keys a pause writes: Obliterate pauses first, and it must get
  -- to delete a list or set another program overwrote.
  local wrongType = wrongTypeKeys({{metaKey, "hash"}, {eventsKey, "stream"}})
  if wrongType then
    return wrongType
  end
  local changed = rcall("HSET", metaKey, "paused", 1)
  rcall("DEL", markerKey)
  rcall("XADD", eventsKey, "*", "event", "paused")
  onceRemember(callKey, changed, ARGV[4])
  return changed
end

local wrongType = wrongTypeQueueKey()
if wrongType then
  return wrongType
end
local changed = rcall("HDEL", metaKey, "paused")
-- A legacy (v5) paused list goes back to the front of wait.
if rcall("EXISTS", pausedKey) == 1 then
  if rcall("EXISTS", waitKey) == 0 then
    rcall("RENAME", pausedKey, waitKey)
  else
    local ids = rcall("LRANGE", pausedKey, 0, -1)
    inChunks("RPUSH", waitKey, ids, 7000)
    rcall("DEL", pausedKey)
  end
end
if rcall("LLEN", waitKey) + rcall("ZCARD", prioritizedKey) > 0 then
  -- Written at the global concurrency cap too, as BullMQ's resume does
  -- (a worker it wakes finds the queue maxed and waits again).
  rcall("ZADD", markerKey, "0", "0")
else
  addDelayMarker(markerKey, delayedKey)
end
rcall("XADD", eventsKey, "*", "event", "resumed")
onceRemember(callKey, changed, ARGV[4])
return changed
