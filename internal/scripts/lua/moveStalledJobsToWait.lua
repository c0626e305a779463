-- moveStalledJobsToWait: the stalled-job checker. At most once per interval
-- across all workers (guarded by the stalled-check key), move active jobs whose
-- lock expired back to the front of wait, count the stall in `stc`, and mark
-- jobs stalled past the limit for a deferred failure (`defa`), as BullMQ does.
-- Then remember every active job as a candidate for the next pass.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 now ms, 3 stalled interval ms, 4 max stalled count.
-- Returns {ran (0/1), {id, stalledCount, ...}} for the jobs moved.
--@include common
--@include queue

if rcall("EXISTS", stalledCheckKey) == 1 then
  return {0, {}}
end
rcall("SET", stalledCheckKey, ARGV[2], "PX", ARGV[3])
local maxLen = maxEvents(metaKey)
rcall("XTRIM", eventsKey, "MAXLEN", "~", maxLen)

local maxStalled = tonumber(ARGV[4])
local repeatKey = base .. "repeat"
local moved = {}
local candidates = rcall("SMEMBERS", stalledKey)
if #candidates > 0 then
  rcall("DEL", stalledKey)
  for _, id in ipairs(candidates) do
    if string.sub(id, 1, 2) == "0:" then
      rcall("LREM", activeKey, 1, id)
    elseif rcall("EXISTS", base .. id .. ":lock") == 0 and rcall("LREM", activeKey, 1, id) > 0 then
      local jobKey = base .. id
      -- pcall: HINCRBY refuses an stc that is no integer (another tool's
      -- "abc"), and an error here would leave the job out of active and
      -- out of wait, lost (BullMQ's check loses it so). Such a value
      -- counts as 0, as the job decoder reads it.
      local stc = redis.pcall("HINCRBY", jobKey, "stc", 1)
      if type(stc) ~= "number" then
        stc = 1
        rcall("HSET", jobKey, "stc", stc)
      end
      -- A scheduler's run is never failed for stalling, nor a legacy (v5)
      -- repeatable job, whose key the repeat set lists without a hash.
      if stc > maxStalled then
        local rjk = rcall("HGET", jobKey, "rjk")
        if not (rjk and (rcall("EXISTS", repeatKey .. ":" .. rjk) == 1 or rcall("ZSCORE", repeatKey, rjk))) then
          rcall("HSET", jobKey, "defa", "job stalled more than allowable limit")
        end
      end
      rcall("RPUSH", waitKey, id)
      rcall("XADD", eventsKey, "*", "event", "waiting", "jobId", id, "prev", "active")
      rcall("XADD", eventsKey, "*", "event", "stalled", "jobId", id)
      moved[#moved + 1] = id
      moved[#moved + 1] = stc
    end
  end
  -- Judge "maxed" after the moved jobs left active, as BullMQ does per job:
  -- under a global concurrency the stalled jobs themselves filled it.
  if #moved > 0 then
    addBaseMarker(markerKey, pausedOrMaxed(metaKey, activeKey))
  end
end

local active = rcall("LRANGE", activeKey, 0, -1)
for from = 1, #active, 7000 do
  local to = math.min(from + 6999, #active)
  rcall("SADD", stalledKey, unpack(active, from, to))
end
return {1, moved}
