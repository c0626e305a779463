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

-- dedupAdd decides whether an add of job newId with deduplication id deid
-- (ttl ms, flags "r" replace and/or "e" extend) is swallowed. Returns the
-- owning job's id when it is, else nil and, when a stale key was taken
-- over, the id of the removed former owner. maxLen caps the queue's events.
local function dedupAdd(qbase, maxLen, deid, ttl, flags, newId)
  local dedupKey = qbase .. "de:" .. deid
  local events = qbase .. "events"
  local replace = string.find(flags, "r", 1, true) ~= nil
  local extend = string.find(flags, "e", 1, true) ~= nil
  if replace then
    local cur = rcall("GET", dedupKey)
    if not cur then
      setDedup(dedupKey, newId, ttl, false)
      return nil
    end
    if rcall("ZREM", qbase .. "delayed", cur) == 1 then
      removeJobKeys(qbase .. cur)
      rcall("XADD", events, "*", "event", "removed", "jobId", cur, "prev", "delayed")
      rcall("XADD", events, "MAXLEN", "~", maxLen, "*", "event", "deduplicated",
        "jobId", newId, "deduplicationId", deid, "deduplicatedJobId", cur)
      rcall("DEL", qbase .. "dn:" .. deid)
      if ttl > 0 and not extend then
        rcall("SET", dedupKey, newId, "KEEPTTL")
      else
        setDedup(dedupKey, newId, ttl, false)
      end
      return nil
    end
    if staleOwner(qbase, dedupKey, cur) then
      rcall("DEL", qbase .. "dn:" .. deid)
      setDedup(dedupKey, newId, ttl, false)
      return nil, cur
    end
    return cur
  end
  if extend and ttl > 0 then
    local cur = rcall("GET", dedupKey)
    if not cur then
      setDedup(dedupKey, newId, ttl, false)
      return nil
    end
    if staleOwner(qbase, dedupKey, cur) then
      rcall("DEL", qbase .. "dn:" .. deid)
      setDedup(dedupKey, newId, ttl, false)
      return nil, cur
    end
    setDedup(dedupKey, cur, ttl, false)
    rcall("XADD", events, "MAXLEN", "~", maxLen, "*", "event", "deduplicated",
      "jobId", cur, "deduplicationId", deid, "deduplicatedJobId", newId)
    return cur
  end
  if setDedup(dedupKey, newId, ttl, true) then
    return nil
  end
  local cur = rcall("GET", dedupKey)
  if cur and staleOwner(qbase, dedupKey, cur) then
    rcall("DEL", qbase .. "dn:" .. deid)
    setDedup(dedupKey, newId, ttl, false)
    return nil, cur
  end
  rcall("XADD", events, "MAXLEN", "~", maxLen, "*", "event", "deduplicated",
    "jobId", cur, "deduplicationId", deid, "deduplicatedJobId", newId)
  return cur
end
