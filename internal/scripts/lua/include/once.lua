-- once.lua: a write happens exactly once per call: adds (addJobs,
-- addFlow), cancelJob's failing of a job not running, the admin writes on
-- one job and the bulk ones (drain, clean, retry and promote in chunks),
-- scheduler upserts and removals, a flow child's detach from its parent
-- and a parent's removal of its pending children, a job's release of its
-- deduplication id. A client that lost the reply retries the
-- command, so the script may run again for the same call: the first run
-- stores its reply under <base>add:<token> for the token's ttl; a run that
-- finds it returns that reply and writes nothing. (':' cannot occur in a
-- job id, so the key is no job's.)
-- Expects common.lua in scope.

-- onceReply is the key of call token's reply under qbase (nil without a
-- token) and the reply an earlier run of this call stored there, or nil.
local function onceReply(qbase, token)
  if token == "" then
    return nil, nil
  end
  local key = qbase .. "add:" .. token
  local first = rcall("GET", key)
  if first then
    return key, cjson.decode(first)
  end
  return key, nil
end

-- onceRemember keeps this run's replies under key for ttl ms. A reply that
-- is a number (addJobs' id base) is written with %d: cjson.encode keeps 14
-- digits only.
local function onceRemember(key, replies, ttl)
  if key then
    local text = type(replies) == "number" and string.format("%d", replies) or cjson.encode(replies)
    rcall("SET", key, text, "PX", ttl)
  end
end

-- addedReply is addJobs' and addFlow's reply for a job the add created:
-- "readded" with the removed owner's id when it took over a stale dedup key
-- (recovered), else "created".
local function addedReply(id, recovered)
  if recovered then
    return {"readded", id, recovered}
  end
  return {"created", id, ""}
end
