-- addPlainJobs: addJobs for a batch of plain jobs, the common add: no custom
-- id, no delay, no priority, no lifo, no deduplication id. It writes what
-- addJobs writes for such a batch, command for command and byte for byte
-- (the job hashes with delay and priority "0", the "added" and "waiting"
-- events, the wait list, the marker, the id counter, the call's reply),
-- without addJobs' per-record options, reply entries and pending-state
-- tables, and with 4 arguments a record instead of 11 (each argument is a
-- Lua string Redis makes per call). TestAddPlainMatchesAddJobs holds the
-- two to each other.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 call token ("" = none), 3 call token ttl ms, then n >= 1
--   records of 4 fields: name, timestamp ms, data JSON, opts JSON.
-- Returns the id counter's value before the batch: record i (from 1) got
--   id idBase + i (addJobs' reply when every record created a job).
-- Exactly once per call, as include/once.lua does it (<base>add:<token>),
-- written out here: this script defines no function, as Redis makes each
-- one anew on every call (about 1,000 instructions a function).
--@include prologue
--@include queue

local callKey = nil
if ARGV[2] ~= "" then
  callKey = base .. "add:" .. ARGV[2]
  local first = rcall("GET", callKey)
  if first then
    return cjson.decode(first)
  end
end

local n = (#ARGV - 3) / 4
-- One read of the meta hash serves the event cap (written as BullMQ's
-- default when missing, as maxEvents in common.lua) and the pause and
-- global concurrency check (no marker for a blocked queue).
local meta = rcall("HMGET", metaKey, "opts.maxLenEvents", "paused", "concurrency")
local maxLen = meta[1]
if not maxLen then
  maxLen = "10000"
  rcall("HSET", metaKey, "opts.maxLenEvents", maxLen)
end
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
-- One LPUSH for the batch (5,000 ids a command, within what unpack
-- returns): the order one push per job gives.
for from = 1, n, 5000 do
  rcall("LPUSH", waitKey, unpack(ids, from, math.min(from + 4999, n)))
end
if not blocked then
  rcall("ZADD", markerKey, "0", "0")
end
if callKey then
  -- %d: tostring and cjson keep 14 digits only.
  rcall("SET", callKey, string.format("%d", idBase), "PX", ARGV[3])
end
return idBase
