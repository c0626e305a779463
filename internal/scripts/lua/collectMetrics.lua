-- collectMetrics: count jobs a worker finished for good in BullMQ's
-- per-minute metrics ("<queue>:metrics:completed|failed" hash with count,
-- prevTS and prevCount; ":data" list of per-minute counts, newest first),
-- as Node workers with the metrics option do in moveToFinished. A batch of
-- n jobs finished at the same time counts as n single finishes would: only
-- the first can close a minute.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 now ms, 3 max data points, 4 completed count, 5 failed count.
-- Returns 0.
--@include common
--@include queue

local nowText = ARGV[2]
local maxPoints = tonumber(ARGV[3])

local function collect(kind, n)
  if n <= 0 then
    return
  end
  local metaKey = base .. "metrics:" .. kind
  local dataKey = metaKey .. ":data"
  local count = rcall("HINCRBY", metaKey, "count", n) - n
  local prevTS = rcall("HGET", metaKey, "prevTS")
  if not prevTS then
    rcall("HSET", metaKey, "prevTS", nowText, "prevCount", 0)
    return
  end
  local points = math.min(math.floor(tonumber(nowText) / 60000) - math.floor(tonumber(prevTS) / 60000), maxPoints)
  if points > 0 then
    local delta = count - tonumber(rcall("HGET", metaKey, "prevCount") or 0)
    local list = {delta}
    for i = 2, points do
      list[i] = 0
    end
    inChunks("LPUSH", dataKey, list, 7000)
    rcall("LTRIM", dataKey, 0, maxPoints - 1)
    rcall("HSET", metaKey, "prevCount", count, "prevTS", nowText)
  end
end

collect("completed", tonumber(ARGV[4]))
collect("failed", tonumber(ARGV[5]))
return 0
