-- scheduler.lua: job scheduler helpers (BullMQ's data model: the "repeat"
-- zset maps a scheduler id to its next run, "repeat:<id>" holds the
-- scheduler, and each run is a job "repeat:<id>:<ms>").
-- Expects common.lua and queue.lua in scope.

local repeatKey = base .. "repeat"

-- msText formats whole milliseconds without an exponent.
local function msText(ms)
  return string.format("%d", ms)
end

-- everyNext returns the next run (ms) of an `every` scheduler and its offset
-- within the interval. prev is the scheduler's current next run, nil when
-- it is new or its interval changed. A new scheduler starts at startDate
-- (or now), or at the next slot that keeps a non-zero offset; a running one
-- moves on by one interval, or realigns to the offset after missed runs.
local function everyNext(prev, every, now, offset, startDate)
  offset = tonumber(offset) or 0
  local nextMs
  if not prev then
    if startDate then
      nextMs = math.max(tonumber(startDate), now)
    elseif offset > 0 then
      nextMs = math.floor(now / every) * every + offset
      if nextMs <= now then
        nextMs = nextMs + every
      end
    else
      nextMs = now
    end
  else
    nextMs = prev + every
    if nextMs < now then
      local aligned = math.floor(now / every) * every + offset
      if aligned <= now then
        nextMs = aligned + every
      else
        nextMs = aligned
      end
    end
  end
  if offset == 0 then
    offset = nextMs - math.floor(nextMs / every) * every
  end
  return math.floor(nextMs), math.floor(offset)
end

-- iterationOpts completes the opts JSON of a run (built by the caller
-- without them) with its jobId and relative delay.
local function iterationOpts(opts, jobId, delay)
  local head = string.sub(opts, 1, -2)
  if head ~= "{" then
    head = head .. ","
  end
  return head .. '"jobId":"' .. jobId .. '","delay":' .. msText(delay) .. "}"
end

-- addIteration stores a run and queues it: delayed when delay > 0, else in
-- wait or prioritized, with BullMQ's events and markers. deid, when not nil
-- or "", is the deduplication id of the run's opts, stored as BullMQ's add
-- stores it (the field only: no deduplication key is set).
local function addIteration(jobId, schedulerId, name, data, opts, nowText, delay, priority, lifo, maxLen, deid)
  local jobKey = base .. jobId
  if deid and deid ~= "" then
    rcall("HSET", jobKey, "name", name, "data", data, "opts", opts, "timestamp", nowText,
      "delay", msText(delay), "priority", priority, "rjk", schedulerId, "deid", deid)
  else
    rcall("HSET", jobKey, "name", name, "data", data, "opts", opts, "timestamp", nowText,
      "delay", msText(delay), "priority", priority, "rjk", schedulerId)
  end
  rcall("XADD", eventsKey, "*", "event", "added", "jobId", jobId, "name", name)
  if delay > 0 then
    local due = tonumber(nowText) + delay
    rcall("ZADD", delayedKey, delayedScore(delayedKey, due), jobId)
    rcall("XADD", eventsKey, "MAXLEN", "~", maxLen, "*", "event", "delayed", "jobId", jobId,
      "delay", msText(due))
    addDelayMarker(markerKey, delayedKey)
  else
    local blocked = pausedOrMaxed(metaKey, activeKey)
    pushReady(waitKey, prioritizedKey, pcKey, jobId, tonumber(priority) or 0, lifo)
    addBaseMarker(markerKey, blocked)
    rcall("XADD", eventsKey, "MAXLEN", "~", maxLen, "*", "event", "waiting", "jobId", jobId)
  end
end
