-- retention.lua: BullMQ's removeOnComplete / removeOnFail ("keep jobs").
-- A spec string is "" (keep all), "0" (drop at once) or "count,ageMs,limit"
-- with count -1 meaning "no count bound" and an empty ageMs "no age bound"
-- (an age of 0 or less is a bound: every job finished by now is expired).
-- Expects common.lua, queue.lua and parent.lua in scope.

local function parseKeep(spec)
  if spec == "" then
    return -1, nil, 0
  end
  if spec == "0" then
    return 0, nil, 0
  end
  local c, a, l = string.match(spec, "^(-?%d+),(-?%d*),(%d+)$")
  return tonumber(c), tonumber(a), tonumber(l)
end

-- trimJob deletes one finished job trimmed by retention: out of its
-- parent's dependencies (soft: the parent is released with an event when
-- it waited for this job alone), keys deleted. Its deduplication id is left
-- alone, as BullMQ's trim does.
local function trimJob(id)
  local jobKey = base .. id
  detachFromParent(jobKey, nil, false)
  removeJobKeys(jobKey)
end

-- trimFinished applies one keep spec to a finished set after jobs were added.
-- The age bound goes first and, like BullMQ's, removes the newest expired
-- jobs first when more than `limit` have expired; then the count bound.
local function trimFinished(setKey, spec, now)
  local count, age, limit = parseKeep(spec)
  if age then
    local cutoff = now - age
    local max = limit > 0 and limit or 1000
    local old = rcall("ZREVRANGEBYSCORE", setKey, cutoff, "-inf", "LIMIT", 0, max)
    for i = 1, #old do
      trimJob(old[i])
    end
    if #old > 0 and #old < max then
      rcall("ZREMRANGEBYSCORE", setKey, "-inf", cutoff)
    else
      inChunks("ZREM", setKey, old, 7000)
    end
  end
  if count > 0 then
    local extra = rcall("ZREVRANGE", setKey, count, -1)
    if #extra > 0 then
      for i = 1, #extra do
        trimJob(extra[i])
      end
      rcall("ZREMRANGEBYRANK", setKey, 0, -(count + 1))
    end
  end
end
