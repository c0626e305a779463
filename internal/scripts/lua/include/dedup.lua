-- dedup.lua: BullMQ's deduplication of an add (simple, throttle with a ttl,
-- extend, replace/debounce, and 6.7's recovery of a stale key) for the queue
-- whose "<prefix>:<queue>:" base is qbase. Used by addJobs and addFlow.
-- Expects common.lua in scope.

-- setDedup makes newId own dedupKey for ttl ms (no expiry when ttl is 0).
local function setDedup(dedupKey, newId, ttl, nx)
  if ttl > 0 then
    if nx then
      return rcall("SET", dedupKey, newId, "PX", ttl, "NX")
    end
    return rcall("SET", dedupKey, newId, "PX", ttl)
  end
  if nx then
    return rcall("SET", dedupKey, newId, "NX")
  end
  return rcall("SET", dedupKey, newId)
end

-- staleOwner is true when the dedup key has no TTL and its owner job is gone
-- (6.7's stale-key recovery): the key may then be taken over.
local function staleOwner(qbase, dedupKey, cur)
  return rcall("PTTL", dedupKey) == -1 and rcall("EXISTS", qbase .. cur) == 0
end

-- takeOverStale makes newId own dedupKey (for ttl ms) when its owner cur is
-- stale, dropping an add kept for cur, and reports whether it did.
local function takeOverStale(qbase, dedupKey, deid, cur, newId, ttl)
  if not staleOwner(qbase, dedupKey, cur) then
    return false
  end
  rcall("DEL", qbase .. "dn:" .. deid)
  setDedup(dedupKey, newId, ttl, false)
  return true
end

-- dedupEvent is the deduplicated event: add dupId was swallowed by ownerId.
local function dedupEvent(qbase, maxLen, deid, ownerId, dupId)
  rcall("XADD", qbase .. "events", "MAXLEN", "~", maxLen, "*", "event", "deduplicated",
    "jobId", ownerId, "deduplicationId", deid, "deduplicatedJobId", dupId)
end

-- storeNext is keepLastIfActive's hit path (BullMQ's storeDeduplicatedNextJob):
-- while the owner cur runs (it is in active), the add of newId ({name, data
-- JSON, opts JSON} in add) is kept in dn:<deid>, replacing an earlier kept
-- one, and the key loses its expiry so the id stays taken while the owner
-- runs. finishJobs queues the kept add when the owner finishes
-- (requeueNext). Returns whether it kept the add.
local function storeNext(qbase, maxLen, deid, cur, newId, add)
  if not rcall("LPOS", qbase .. "active", cur) then
    return false
  end
  local nextKey = qbase .. "dn:" .. deid
  rcall("DEL", nextKey)
  rcall("HSET", nextKey, "name", add[1], "data", add[2], "opts", add[3], "jid", newId)
  rcall("PERSIST", qbase .. "de:" .. deid)
  dedupEvent(qbase, maxLen, deid, cur, newId)
  return true
end

-- reschedule is 6.7's reschedule of a swallowing owner cur that is still
-- delayed: its delay field becomes the swallowed add's delay ms and it is
-- due at the add's timestamp plus that delay (at the timestamp for 0), with
-- a delayed event and the delay marker, as an add of a delayed job writes.
local function reschedule(qbase, maxLen, cur, delay, timestamp)
  local delayedKey = qbase .. "delayed"
  if not rcall("ZSCORE", delayedKey, cur) then
    return
  end
  rcall("HSET", qbase .. cur, "delay", delay)
  local due = tonumber(timestamp)
  if delay > 0 then
    due = due + delay
  end
  rcall("ZADD", delayedKey, delayedScore(delayedKey, due), cur)
  rcall("XADD", qbase .. "events", "MAXLEN", "~", maxLen, "*", "event", "delayed", "jobId", cur, "delay", due)
  addDelayMarker(qbase .. "marker", delayedKey)
end

-- dedupAdd decides whether an add of job newId with deduplication id deid
-- (ttl ms, flags "r" replace, "e" extend, "k" keepLastIfActive, "s"
-- reschedule, in any combination) is swallowed. add is the job's {name, data
-- JSON, opts JSON, delay ms, timestamp ms}: its first three are kept for
-- later under "k" (storeNext), the last two move a delayed owner under "s"
-- (reschedule, BullMQ's only when the add is swallowed without "r" and not
-- kept). Returns the owning job's id when it is swallowed, else nil and,
-- when a stale key was taken over, the id of the removed former owner.
-- maxLen caps the queue's events. Under "k" the key never expires (BullMQ
-- ignores the ttl then), but which branch runs still follows the ttl, as in
-- BullMQ.
local function dedupAdd(qbase, maxLen, deid, ttl, flags, newId, add)
  local dedupKey = qbase .. "de:" .. deid
  local events = qbase .. "events"
  local replace = string.find(flags, "r", 1, true) ~= nil
  local extend = string.find(flags, "e", 1, true) ~= nil
  local keep = string.find(flags, "k", 1, true) ~= nil
  local resched = string.find(flags, "s", 1, true) ~= nil
  local keyTTL = keep and 0 or ttl
  if replace then
    local cur = rcall("GET", dedupKey)
    if not cur then
      setDedup(dedupKey, newId, keyTTL, false)
      return nil
    end
    if rcall("ZREM", qbase .. "delayed", cur) == 1 then
      removeJobKeys(qbase .. cur)
      rcall("XADD", events, "*", "event", "removed", "jobId", cur, "prev", "delayed")
      dedupEvent(qbase, maxLen, deid, newId, cur)
      rcall("DEL", qbase .. "dn:" .. deid)
      if ttl > 0 and not extend and not keep then
        rcall("SET", dedupKey, newId, "KEEPTTL")
      else
        setDedup(dedupKey, newId, keyTTL, false)
      end
      return nil
    end
    if takeOverStale(qbase, dedupKey, deid, cur, newId, keyTTL) then
      return nil, cur
    end
    if keep then
      storeNext(qbase, maxLen, deid, cur, newId, add)
    end
    return cur
  end
  if extend and ttl > 0 then
    local cur = rcall("GET", dedupKey)
    if not cur then
      setDedup(dedupKey, newId, keyTTL, false)
      return nil
    end
    if takeOverStale(qbase, dedupKey, deid, cur, newId, keyTTL) then
      return nil, cur
    end
    if keep and storeNext(qbase, maxLen, deid, cur, newId, add) then
      return cur
    end
    setDedup(dedupKey, cur, keyTTL, false)
    dedupEvent(qbase, maxLen, deid, cur, newId)
    if resched then
      reschedule(qbase, maxLen, cur, tonumber(add[4]) or 0, add[5])
    end
    return cur
  end
  if setDedup(dedupKey, newId, keyTTL, true) then
    return nil
  end
  local cur = rcall("GET", dedupKey)
  if cur and takeOverStale(qbase, dedupKey, deid, cur, newId, keyTTL) then
    return nil, cur
  end
  if keep and storeNext(qbase, maxLen, deid, cur, newId, add) then
    return cur
  end
  dedupEvent(qbase, maxLen, deid, cur, newId)
  if resched then
    reschedule(qbase, maxLen, cur, tonumber(add[4]) or 0, add[5])
  end
  return cur
end
