-- addPlainJobs: addJobs for a batch of plain jobs, the common add: no custom
-- id, no delay, no priority, no lifo, no deduplication id. It writes what
-- addJobs writes for such a batch, command for command and byte for byte
-- (the job hashes with delay and priority "0", the "added" and "waiting"
-- events, the wait list, the marker, the id counter), without addJobs'
-- per-record options, reply entries and pending-state tables, and with 4
-- arguments a record instead of 11 (each argument is a Lua string Redis
-- makes per call). TestAddPlainMatchesAddJobs holds the two to each other.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 call token ("" = none), 3 call token ttl ms, then n >= 1
--   records of 4 fields: name, timestamp ms, data JSON, opts JSON.
-- Returns the id counter's value before the batch: record i (from 1) got
--   id idBase + i (addJobs' reply when every record created a job).
-- Exactly once per call (include/once.lua: <base>add:<token>).
--@include common
--@include queue
--@include once

local callKey, first = onceReply(base, ARGV[2])
if first then
  return first
end

local n = (#ARGV - 3) / 4
-- One read of the meta hash serves the event cap and the pause/concurrency
-- check, as in addJobs.
local meta = rcall("HMGET", metaKey, "opts.maxLenEvents", "paused", "concurrency")
local maxLen = meta[1] or maxEvents(metaKey)
local blocked = meta[2] ~= false or (meta[3] ~= false and rcall("LLEN", activeKey) >= tonumber(meta[3]))

local idBase = rcall("INCRBY", idKey, n) - n
local ids = {}
local o = 3
for i = 1, n do
  local id = tostring(idBase + i)
  local name = ARGV[o + 1]
  rcall("HSET", base .. id, "name", name, "data", ARGV[o + 3], "opts", ARGV[o + 4],
    "timestamp", ARGV[o + 2], "delay", "0", "priority", "0")
  rcall("XADD", eventsKey, "*", "event", "added", "jobId", id, "name", name)
  rcall("XADD", eventsKey, "MAXLEN", "~", maxLen, "*", "event", "waiting", "jobId", id)
  ids[i] = id
  o = o + 4
end
-- One LPUSH for the batch: the order one push per job gives.
inChunks("LPUSH", waitKey, ids, 5000)
addBaseMarker(markerKey, blocked)
onceRemember(callKey, idBase, ARGV[3])
return idBase
