-- addJobs: store and enqueue a batch of new jobs (a single add is a batch of one).
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 call token ("" = none), 3 call token ttl ms, 4 job count n,
--   then n records of 11 fields:
--   id ("" = take the next counter value), name, timestamp ms, data JSON,
--   opts JSON, delay ms (> 0 = delayed), priority (0 = none), lifo ("1"/"0"),
--   deduplication id ("" = none), deduplication ttl ms (0 = none),
--   deduplication flags ("r" replace/debounce, "e" extend, "k"
--   keepLastIfActive, "s" reschedule, any combination, or "").
-- Returns the id counter's value before the batch (an integer) when every
--   record created a job: record i (from 1) got id idBase + i unless it had
--   its own. Otherwise one {outcome, id, state} per record, where outcome is
--   "created", "duplicate" (custom id exists; state is its state),
--   "deduplicated" (dedup id owned by job `id`; state is its state) or
--   "readded" (created, taking over a dedup id whose owner job had been
--   removed; state is the removed owner's id). A duplicate or deduplicated
--   record's entry has a fourth element, the existing job's hash (HGETALL's
--   field/value list), so the caller need not read it in a second round
--   trip; or, when an earlier record of this call created that job, the
--   index (from 0) of that record: its hash is the record's fields as
--   written here, which the caller has. The reply kept for a re-run of the
--   call has the three only.
-- Exactly once per call (include/once.lua: <base>add:<token>).
--@include common
--@include queue
--@include once

-- cold() makes the helpers of a duplicate or a deduplication id on the
-- call's first need of them. Redis makes every top-level function of a
-- script anew on each call (a closure, its upvalues looked up one by one:
-- about 1,300 instructions each), and a plain add needs none of these.
local coldHelpers
local function cold()
  if coldHelpers then
    return coldHelpers
  end
  --@include state
  --@include dedup
  coldHelpers = {jobState = jobState, dedupAdd = dedupAdd}
  return coldHelpers
end

local callKey, first = onceReply(base, ARGV[2])
if first then
  return first
end

local n = tonumber(ARGV[4])
-- One read of the meta hash serves the event cap and the pause/concurrency
-- check (what maxEvents and pausedOrMaxed read; nothing below changes meta).
local meta = rcall("HMGET", metaKey, "opts.maxLenEvents", "paused", "concurrency")
local maxLen = meta[1] or maxEvents(metaKey)
local blocked = meta[2] ~= false or (meta[3] ~= false and rcall("LLEN", activeKey) >= tonumber(meta[3]))
local replies = {}
-- existing[i] is the hash of the job reply i names, for a duplicate or a
-- deduplicated record, or the index of the record of this call that made
-- it (added to the reply after it is remembered).
local existing = {}
local delayMarker = false

-- Every add draws a number from the id counter, custom ids too (BullMQ
-- does): one INCRBY reserves them for the batch, in order.
local counter = rcall("INCRBY", idKey, n) - n
local idBase = counter
-- allCreated: every record made a new job (no duplicate, no dedup hit, no
-- take-over of a stale dedup id), the usual case (see the reply below).
local allCreated = true
-- Pushes to wait and prioritized are collected and made with one command
-- each at the end: LPUSH only touches the left end and RPUSH the right, so
-- the order is what one push per job gives. pending remembers where each
-- new job is going, and createdBy which record made it, for a duplicate of
-- it later in the same batch (no later record of the batch changes a
-- waiting or prioritized job's hash: a replace or reschedule takes only a
-- delayed owner, keepLastIfActive only an active one).
local fifo, lifo, prio, pending, createdBy = {}, {}, {}, {}, {}

for i = 0, n - 1 do
  local o = 4 + i * 11
  local id = ARGV[o + 1]
  local name = ARGV[o + 2]
  local timestamp = ARGV[o + 3]
  local delay = tonumber(ARGV[o + 6])
  local priority = tonumber(ARGV[o + 7])
  local deid = ARGV[o + 9]

  counter = counter + 1
  local duplicate = false
  if id == "" then
    id = tostring(counter)
  else
    duplicate = rcall("EXISTS", base .. id) == 1
  end
  local jobKey = base .. id
  local owner = nil
  if duplicate then
    rcall("XADD", eventsKey, "MAXLEN", "~", maxLen, "*", "event", "duplicated", "jobId", id)
    allCreated = false
    if pending[id] then
      replies[#replies + 1] = {"duplicate", id, pending[id]}
      existing[#replies] = createdBy[id]
    else
      local fields = rcall("HGETALL", jobKey)
      replies[#replies + 1] = {"duplicate", id, cold().jobState(id, fields)}
      existing[#replies] = fields
    end
  else
    local recovered = nil
    if deid ~= "" then
      if delayMarker then
        -- BullMQ marks each delayed job's due time as it adds it, and a
        -- replace below may remove that job: mark what is delayed now.
        addDelayMarker(markerKey, delayedKey)
        delayMarker = false
      end
      owner, recovered = cold().dedupAdd(base, maxLen, deid, tonumber(ARGV[o + 10]) or 0, ARGV[o + 11], id,
        {name, ARGV[o + 4], ARGV[o + 5], delay, timestamp})
    end
    if owner then
      allCreated = false
      if pending[owner] then
        replies[#replies + 1] = {"deduplicated", owner, pending[owner]}
        existing[#replies] = createdBy[owner]
      else
        local fields = rcall("HGETALL", base .. owner)
        replies[#replies + 1] = {"deduplicated", owner, cold().jobState(owner, fields)}
        existing[#replies] = fields
      end
    else
      if deid ~= "" then
        rcall("HSET", jobKey, "name", name, "data", ARGV[o + 4], "opts", ARGV[o + 5],
          "timestamp", timestamp, "delay", ARGV[o + 6], "priority", ARGV[o + 7], "deid", deid)
      else
        rcall("HSET", jobKey, "name", name, "data", ARGV[o + 4], "opts", ARGV[o + 5],
          "timestamp", timestamp, "delay", ARGV[o + 6], "priority", ARGV[o + 7])
      end
      rcall("XADD", eventsKey, "*", "event", "added", "jobId", id, "name", name)
      if delay > 0 then
        local due = tonumber(timestamp) + delay
        rcall("ZADD", delayedKey, delayedScore(delayedKey, due), id)
        rcall("XADD", eventsKey, "MAXLEN", "~", maxLen, "*", "event", "delayed", "jobId", id, "delay", due)
        delayMarker = true
      else
        if priority ~= 0 then
          prio[#prio + 1] = {priority, id}
          pending[id] = "prioritized"
        elseif ARGV[o + 8] == "1" then
          lifo[#lifo + 1] = id
          pending[id] = "waiting"
        else
          fifo[#fifo + 1] = id
          pending[id] = "waiting"
        end
        rcall("XADD", eventsKey, "MAXLEN", "~", maxLen, "*", "event", "waiting", "jobId", id)
        createdBy[id] = i
      end
      if recovered then
        allCreated = false
      end
      replies[#replies + 1] = addedReply(id, recovered)
    end
  end
end

inChunks("LPUSH", waitKey, fifo, 5000)
inChunks("RPUSH", waitKey, lifo, 5000)
if #prio > 0 then
  -- One counter value per job, as one INCR each would give.
  local c = rcall("INCRBY", pcKey, #prio) - #prio
  local args = {}
  for k, p in ipairs(prio) do
    args[#args + 1] = priorityScoreOf(p[1], c + k)
    args[#args + 1] = p[2]
  end
  inChunks("ZADD", prioritizedKey, args, 5000)
end
if #fifo + #lifo + #prio > 0 then
  addBaseMarker(markerKey, blocked)
end
if delayMarker then
  addDelayMarker(markerKey, delayedKey)
end
-- Every record created: the reply is the id counter's value before the
-- batch, from which the caller derives each generated id (record i got
-- idBase + i), instead of n {"created", id, ""} triples built, encoded for
-- the call key and sent (that part alone, for a batch of 5: 12.7 us per
-- call against 4.7).
if allCreated then
  replies = idBase
end
onceRemember(callKey, replies, ARGV[3])
for i, h in pairs(existing) do
  replies[i][4] = h
end
return replies
