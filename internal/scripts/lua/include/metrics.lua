-- metrics.lua: BullMQ's per-minute job metrics, which a Node worker with the
-- metrics option writes in moveToFinished and finishJobs writes in the same
-- step as the finish. Layout: "<queue>:metrics:completed|failed" is a hash
-- of count (every job counted so far), prevTS (ms of the last minute
-- closed) and prevCount (count at that time); its ":data" list holds one
-- count per minute, newest first, at most maxPoints of them.

-- countMetrics counts n jobs of kind ("completed" or "failed") finished at
-- nowText (ms, as text). n jobs finished at one instant count as n single
-- finishes would: only the first can close a minute.
local function countMetrics(kind, n, nowText, maxPoints)
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
