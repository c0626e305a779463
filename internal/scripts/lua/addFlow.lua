-- addFlow: store one flow (a tree of jobs over one or more queues) in one
-- atomic step, as BullMQ's FlowProducer.add does with one MULTI of its
-- per-job add scripts followed by releaseParentIfNoPendingDependencies.
-- KEYS: the 16 queue keys of the root's queue (include/queue.lua); the
--   keys of the other queues are built from each record's base, which must
--   share the root's hash slot on a cluster (the Go side checks the tags).
-- ARGV: 1 root base, 2 call token ("" = none), 3 call token ttl ms, 4 now
--   ms (when released parents are due), 5 record count n, then n records of
--   REC_FIELDS fields in the order of flowRecord (internal/scripts/flows.go):
--   base of the job's queue, id (always given), name, timestamp ms, data
--   JSON, opts JSON, delay ms, priority, lifo ("1"/"0"), parent record (its
--   1-based index; 0 = none or the next field), parent key of a tree's root
--   ("" = none; that job must exist), parent JSON (the
--   job hash's "parent" field; "" = no parent), "1" when the job has
--   children (it waits for them in waiting-children), deduplication id
--   ("" = none), its ttl ms, its flags ("r" replace, "e" extend, "k" keepLastIfActive,
--   "s" reschedule; only a lone root has them: BullMQ refuses deduplication
--   on a job with children or a parent).
--   Records come parents first, in BullMQ's insertion order (breadth
--   first), so ids, events and list orders are the ones Node writes.
-- Returns one {outcome, id, state} per record as addJobs does ("created",
--   "duplicate": the id exists and the job is attached to its parent here,
--   "deduplicated": swallowed, not a dependency of its parent, "readded"),
--   or {code, record} when the tree is refused and nothing was written:
--   -5 record's parent key names no job, -7 record's id exists as the
--   child of another live parent (BullMQ: "cannot be replaced").
-- Exactly once per call (include/once.lua: <root base>add:<token>).
--@include common
--@include queue
--@include state
--@include dedup
--@include once
--@include parent
--@record flow

local callKey, first = onceReply(base, ARGV[2])
if first then
  return first
end

local now = tonumber(ARGV[4])
local n = tonumber(ARGV[5])
local recordAt = function(i) return 5 + (i - 1) * REC_FIELDS end
local function field(i, name)
  return ARGV[recordAt(i) + REC[name]]
end

-- refuse answers a refused tree: the code and the record it is about.
local function refuse(code, i)
  return {code, i}
end

-- parentKeyOf is the full key of record i's parent, or nil.
local function parentKeyOf(i)
  local p = tonumber(field(i, "parentIndex"))
  if p > 0 then
    return field(p, "base") .. field(p, "id")
  end
  local key = field(i, "parentKey")
  if key ~= "" then
    return key
  end
  return nil
end

-- Check everything that could refuse the tree before writing anything.
for i = 1, n do
  local key = field(i, "parentKey")
  if key ~= "" and rcall("EXISTS", key) == 0 then
    return refuse(-5, i)
  end
end
for i = 1, n do
  local jobKey = field(i, "base") .. field(i, "id")
  local parentKey = parentKeyOf(i)
  if parentKey then
    local had = rcall("HGET", jobKey, "parentKey")
    if had and had ~= parentKey and rcall("EXISTS", had) == 1 then
      return refuse(-7, i)
    end
  end
end

local maxLens = {}
local function maxLenOf(qbase)
  local m = maxLens[qbase]
  if not m then
    m = maxEvents(qbase .. "meta")
    maxLens[qbase] = m
  end
  return m
end

local replies = {}
-- The parents this tree touched, in first-touch order, to release those
-- left with nothing to wait for once every job is in.
local parents, parentSeen = {}, {}

for i = 1, n do
  local qbase = field(i, "base")
  local id = field(i, "id")
  local name = field(i, "name")
  local timestamp = field(i, "timestamp")
  local jobKey = qbase .. id
  local events = qbase .. "events"
  local parentKey = parentKeyOf(i)
  local parentJSON = field(i, "parentJSON")
  local deid = field(i, "dedupId")
  if parentKey and not parentSeen[parentKey] then
    parentSeen[parentKey] = true
    parents[#parents + 1] = parentKey
  end

  -- Every add draws a number from its queue's id counter, as BullMQ's do.
  rcall("INCR", qbase .. "id")
  local maxLen = maxLenOf(qbase)

  if rcall("EXISTS", jobKey) == 1 then
    -- The id exists: attach that job to this parent (the checks above made
    -- sure it has no other live one). A completed job counts as processed.
    if parentKey then
      if rcall("ZSCORE", qbase .. "completed", id) then
        rcall("HSET", parentKey .. ":processed", jobKey, rcall("HGET", jobKey, "returnvalue"))
      else
        rcall("SADD", parentKey .. ":dependencies", jobKey)
      end
      rcall("HSET", jobKey, "parentKey", parentKey, "parent", parentJSON)
    end
    rcall("XADD", events, "MAXLEN", "~", maxLen, "*", "event", "duplicated", "jobId", id)
    replies[#replies + 1] = {"duplicate", id, jobStateAt(qbase, id)}
  else
    local owner, recovered = nil, nil
    if deid ~= "" then
      owner, recovered = dedupAdd(qbase, maxLen, deid, tonumber(field(i, "dedupTTL")) or 0, field(i, "dedupFlags"), id,
        {name, field(i, "data"), field(i, "opts"), tonumber(field(i, "delay")) or 0, timestamp})
    end
    if owner then
      -- Swallowed: its parent does not wait for the owner, as in BullMQ.
      replies[#replies + 1] = {"deduplicated", owner, jobStateAt(qbase, owner)}
    else
      local fields = {"name", name, "data", field(i, "data"), "opts", field(i, "opts"),
        "timestamp", timestamp, "delay", field(i, "delay"), "priority", field(i, "priority")}
      if parentKey then
        fields[#fields + 1] = "parentKey"
        fields[#fields + 1] = parentKey
        fields[#fields + 1] = "parent"
        fields[#fields + 1] = parentJSON
      end
      if deid ~= "" then
        fields[#fields + 1] = "deid"
        fields[#fields + 1] = deid
      end
      rcall("HSET", jobKey, unpack(fields))
      rcall("XADD", events, "*", "event", "added", "jobId", id, "name", name)
      local delay = tonumber(field(i, "delay"))
      local priority = tonumber(field(i, "priority"))
      if field(i, "hasChildren") == "1" then
        rcall("ZADD", qbase .. "waiting-children", timestamp, id)
        rcall("XADD", events, "MAXLEN", "~", maxLen, "*", "event", "waiting-children", "jobId", id)
      elseif delay > 0 then
        local delayed = qbase .. "delayed"
        local due = tonumber(timestamp) + delay
        rcall("ZADD", delayed, delayedScore(delayed, due), id)
        rcall("XADD", events, "MAXLEN", "~", maxLen, "*", "event", "delayed", "jobId", id, "delay", due)
        addDelayMarker(qbase .. "marker", delayed)
      else
        local blocked = pausedOrMaxed(qbase .. "meta", qbase .. "active")
        if priority > 0 then
          rcall("ZADD", qbase .. "prioritized", priorityScore(qbase .. "prioritized", qbase .. "pc", priority), id)
        elseif field(i, "lifo") == "1" then
          rcall("RPUSH", qbase .. "wait", id)
        else
          rcall("LPUSH", qbase .. "wait", id)
        end
        addBaseMarker(qbase .. "marker", blocked)
        rcall("XADD", events, "MAXLEN", "~", maxLen, "*", "event", "waiting", "jobId", id)
      end
      if parentKey then
        rcall("SADD", parentKey .. ":dependencies", jobKey)
      end
      replies[#replies + 1] = addedReply(id, recovered)
    end
  end
end

-- A parent whose children were all finished already (duplicates of
-- completed jobs) or deduplicated has nothing to wait for.
for _, parentKey in ipairs(parents) do
  if rcall("SCARD", parentKey .. ":dependencies") == 0 and rcall("EXISTS", parentKey) == 1 then
    local parentId, parentBase = splitJobKey(parentKey)
    releaseIfWaiting(string.sub(parentBase, 1, -2), parentKey, parentId, now)
  end
end

onceRemember(callKey, replies, ARGV[3])
return replies
