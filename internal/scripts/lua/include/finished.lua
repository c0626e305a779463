-- finished.lua: what a job's final end (completed, or failed for good)
-- does to the deduplication id it owns, shared by finishJobs and cancelJob.
-- Expects common.lua and queue.lua in scope, and a local maxLen (the events
-- cap).

-- releaseDedup frees the job's deduplication id once it finishes, unless the
-- key carries a TTL (then it expires on its own) or another job owns it.
local function releaseDedup(id, deid)
  local dedupKey = base .. "de:" .. deid
  local pttl = rcall("PTTL", dedupKey)
  if pttl == 0 or (pttl == -1 and rcall("GET", dedupKey) == id) then
    rcall("DEL", dedupKey)
  end
end

-- requeueNext creates the job BullMQ's keepLastIfActive deduplication kept
-- in dn:<id> while the owner ran, now that the owner finished: it takes an
-- id counter value (its stored id wins), owns the deduplication id, and is
-- stored and queued as an add at `now` would be. Only jobs that carried a
-- deduplication id get here.
local function requeueNext(deid, nowText)
  local now = tonumber(nowText)
  local nextKey = base .. "dn:" .. deid
  if rcall("EXISTS", nextKey) == 0 then
    return
  end
  local f = rcall("HMGET", nextKey, "name", "data", "opts", "pk", "pd", "pdk", "rjk", "jid")
  local counter = rcall("INCR", idKey)
  local id = f[8] or tostring(counter)
  local jobKey = base .. id
  local opts = cjson.decode(f[3])
  local de = opts["de"]
  local dedupKey = base .. "de:" .. deid
  local ttl = type(de) == "table" and tonumber(de["ttl"]) or nil
  if type(de) == "table" and de["keepLastIfActive"] then
    rcall("SET", dedupKey, id)
  elseif ttl and ttl > 0 then
    rcall("SET", dedupKey, id, "PX", ttl)
  else
    rcall("SET", dedupKey, id)
  end
  local delay = opts["delay"] or 0
  local priority = opts["priority"] or 0
  local fields = {"name", f[1], "data", f[2], "opts", cjson.encode(opts), "timestamp", nowText,
    "delay", delay, "priority", priority}
  if f[4] then
    fields[#fields + 1] = "parentKey"
    fields[#fields + 1] = f[4]
    if f[5] then
      fields[#fields + 1] = "parent"
      fields[#fields + 1] = f[5]
    end
  end
  if f[7] then
    fields[#fields + 1] = "rjk"
    fields[#fields + 1] = f[7]
  end
  if type(de) == "table" and de["id"] then
    fields[#fields + 1] = "deid"
    fields[#fields + 1] = de["id"]
  end
  rcall("HSET", jobKey, unpack(fields))
  rcall("XADD", eventsKey, "*", "event", "added", "jobId", id, "name", f[1])
  if delay ~= 0 then
    local due = delay > 0 and now + delay or now
    rcall("ZADD", delayedKey, delayedScore(delayedKey, due), id)
    rcall("XADD", eventsKey, "MAXLEN", "~", maxLen, "*", "event", "delayed", "jobId", id, "delay", due)
    addDelayMarker(markerKey, delayedKey)
  else
    local blocked = pausedOrMaxed(metaKey, activeKey)
    if priority > 0 then
      rcall("ZADD", prioritizedKey, priorityScore(prioritizedKey, pcKey, priority), id)
    elseif opts["lifo"] then
      rcall("RPUSH", waitKey, id)
    else
      rcall("LPUSH", waitKey, id)
    end
    addBaseMarker(markerKey, blocked)
    rcall("XADD", eventsKey, "MAXLEN", "~", maxLen, "*", "event", "waiting", "jobId", id)
  end
  if f[6] then
    rcall("SADD", f[6], jobKey)
  end
  rcall("DEL", nextKey)
end
