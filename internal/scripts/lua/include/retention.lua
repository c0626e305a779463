-- retention.lua: BullMQ's removeOnComplete / removeOnFail ("keep jobs").
-- A spec string is "" (keep all), "0" (drop at once) or "count,ageMs,limit"
-- with count -1 meaning "no count bound" and ageMs 0 meaning "no age bound".

local function parseKeep(spec)
  if spec == "" then
    return -1, 0, 0
  end
  if spec == "0" then
    return 0, 0, 0
  end
  local c, a, l = string.match(spec, "^(-?%d+),(%d+),(%d+)$")
  return tonumber(c), tonumber(a), tonumber(l)
end

-- trimFinished applies one keep spec to a finished set after jobs were added.
local function trimFinished(setKey, spec, now)
  local count, age, limit = parseKeep(spec)
  if age > 0 then
    local old = rcall("ZRANGEBYSCORE", setKey, 0, now - age, "LIMIT", 0, limit > 0 and limit or 1000)
    for i = 1, #old do
      removeJobKeys(base .. old[i])
    end
    for from = 1, #old, 7000 do
      rcall("ZREM", setKey, unpack(old, from, math.min(from + 6999, #old)))
    end
  end
  if count > 0 then
    local extra = rcall("ZREVRANGE", setKey, count, -1)
    if #extra > 0 then
      for i = 1, #extra do
        removeJobKeys(base .. extra[i])
      end
      rcall("ZREMRANGEBYRANK", setKey, 0, -(count + 1))
    end
  end
end
