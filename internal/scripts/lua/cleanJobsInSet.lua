-- cleanJobsInSet: remove up to `limit` jobs of one state that are older than
-- a cut-off, skipping locked active jobs and a scheduler's pending iteration.
-- One call looks at no more than `limit` jobs, as BullMQ's does: the `limit`
-- lowest-scored members of a sorted set, the `limit` entries at the tail of
-- a list, walked head to tail. Queue.Clean calls again while a call removes
-- a whole chunk, as Node's Queue.clean does.
-- Age: the score for completed, failed and waiting-children (finishedOn, or
-- the time the parent started to wait); else the first set of processedOn,
-- timestamp (delayed), timestamp (prioritized), or finishedOn, processedOn,
-- timestamp (lists).
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 state (completed|failed|delayed|prioritized|wait|paused|
--   active|waiting-children), 3 cut-off ms, 4 limit (at most 10000 by
--   convention; 0 is taken as 10000), 5 the call token and 6 its ttl ms
--   (include/once.lua: a resend after a lost reply answers the first run's
--   ids; a second run would remove up to `limit` more), 7 "1" for a dry
--   run: the ids a clean would remove now, nothing removed, no event, no
--   token (the clean preview reads the rules here, not a copy of them),
--   8 "" or, for the states not scored by age (wait, paused, active,
--   delayed, prioritized), a position in the window of one BullMQ call that
--   Queue.Clean examines in several smaller calls: for a list, how many
--   entries from the tail the part to examine starts (the window's
--   unexamined part; limit entries of it, walked head to tail, as BullMQ
--   walks its window), for a set the rank of the part's first member
--   (the window's members examined and kept come before it). A dry run
--   of a scored state (completed, failed, waiting-children) takes it too,
--   as the rank in the candidates' range its page starts at (the clean
--   preview reads a window in pages).
--   9 how many jobs the earlier calls of the same BullMQ window removed
--   ("" = none) and 10 "0" when this call may not be the window's last
--   (Queue.Clean asks for less than what is left of the window), else "1".
-- Returns the removed ids; with ARGV[8], {examined, rest, ids}: how many
-- jobs this call looked at, and for a list how many of the window's are
-- left to examine (0 for a set).
--
-- Events: BullMQ writes one "cleaned" event per call, with the count that
-- call removed, and a Node QueueEvents listener sees one per window. So
-- only the window's last call writes it, with the window's count (ARGV 9
-- plus its own): the call told it is the last, or one that ran out of
-- candidates (removed fewer than asked, for the scored states; examined
-- fewer, for a set; left none of the window, for a list).
--
-- A window part's removals never move the rest of the window: in a list
-- they lie above the unexamined part, counted from the tail; in a set
-- they leave the ranks, and the kept members stay before the next part.
-- So the parts remove exactly what BullMQ's one call removes, each a
-- short block of Redis (Queue.Clean's cleanCallChunk).
--@include common
--@include queue
--@include states
--@include remove
--@include once
--@include keytypes

local callKey, early = onceChecked(ARGV[5])
if early then
  return early
end

local state = ARGV[2]
local cutoff = tonumber(ARGV[3])
local limit = tonumber(ARGV[4])
if limit <= 0 then
  limit = 10000
end
local removed = {}
local dry = ARGV[7] == "1"
local at = ARGV[8] ~= "" and ARGV[8] and tonumber(ARGV[8])
local examined, rest = 0, 0
local prior = tonumber(ARGV[9]) or 0
local last = ARGV[10] ~= "0"

-- The fields whose first one set is a job's age, per state (BullMQ's).
local ageFields = {delayed = {"processedOn", "timestamp"}, prioritized = {"timestamp"}}
local defaultAge = {"finishedOn", "processedOn", "timestamp"}

local function jobTime(jobKey)
  local t = rcall("HMGET", jobKey, unpack(ageFields[state] or defaultAge))
  return tonumber(t[1] or t[2] or t[3])
end

local function drop(id)
  if not dry then
    dropJob(id)
  end
  removed[#removed + 1] = id
end

local lists, sets = stateLists, stateSets
lists.wait = waitKey -- clean takes BullMQ's name for waiting too

if state == "completed" or state == "failed" or state == "waiting-children" then
  local ids = rcall("ZRANGEBYSCORE", sets[state], 0, cutoff, "LIMIT", at or 0, limit)
  examined = #ids
  for _, id in ipairs(ids) do
    drop(id)
  end
  if not dry then
    inChunks("ZREM", sets[state], ids, 7000)
  end
  last = last or #ids < limit
elseif sets[state] then
  local ids = rcall("ZRANGEBYSCORE", sets[state], 0, "+inf", "LIMIT", at or 0, limit)
  examined = #ids
  last = last or examined < limit
  for _, id in ipairs(ids) do
    local jobKey = base .. id
    local t = jobTime(jobKey)
    if not isSchedulerIteration(id, jobKey) and (not t or t <= cutoff) then
      if not dry then
        rcall("ZREM", sets[state], id)
      end
      drop(id)
    end
  end
elseif lists[state] then
  local key = lists[state]
  -- from: the part's first entry, counted from the tail (1 = the last);
  -- a list shorter than the window is examined whole, as LRANGE clamps.
  local from = limit
  if at then
    from = math.min(at, rcall("LLEN", key))
  end
  local ids = {}
  if from > 0 then
    ids = rcall("LRANGE", key, -from, -math.max(from - limit + 1, 1))
  end
  from = math.min(from, #ids + math.max(from - limit, 0))
  examined, rest = #ids, math.max(from - limit, 0)
  last = last or rest == 0
  local marked = 0
  for i, id in ipairs(ids) do
    local jobKey = base .. id
    local t = jobTime(jobKey)
    local locked = state == "active" and rcall("EXISTS", jobKey .. ":lock") == 1
    if not locked and not isSchedulerIteration(id, jobKey) and (not t or t <= cutoff) then
      if not dry then
        rcall("LSET", key, i - 1 - from, "")
        marked = marked + 1
      end
      drop(id)
    end
  end
  if marked > 0 then
    rcall("LREM", key, 0, "")
  end
end
local reply = removed
if at then
  reply = {examined, rest, removed}
end
if not dry then
  if last then
    rcall("XADD", eventsKey, "*", "event", "cleaned", "count", prior + #removed)
  end
  onceRemember(callKey, reply, ARGV[6])
end
return reply
