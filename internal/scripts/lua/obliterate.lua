-- obliterate: delete a paused queue and all its jobs, `count` jobs per call.
-- As in BullMQ, flow children leave their parents' dependencies (hard, see
-- include/parent.lua), and waiting-children is not walked: a parent there
-- goes when its last child of this queue goes.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 count, 3 force ("1" deletes active jobs too).
-- The last call also SCANs for the queue's add-call keys (<base>add:*),
-- where the user may run SCAN.
-- Returns 0 done; 1 more jobs remain (call again); -13 queue not paused;
-- -14 active jobs and not forced (codes: internal/scripts/errors.go).
--@include common
--@include queue
--@include remove

if rcall("HEXISTS", metaKey, "paused") == 0 then
  return -13
end
if ARGV[3] ~= "1" and rcall("TYPE", activeKey)["ok"] == "list" and rcall("LLEN", activeKey) > 0 then
  return -14
end
local budget = tonumber(ARGV[2])

local function dropIds(ids, withLocks)
  for _, id in ipairs(ids) do
    if withLocks then
      rcall("DEL", base .. id .. ":lock")
    end
    dropJob(id)
  end
  budget = budget - #ids
end

-- wrongType deletes key when it holds another type than want (another
-- program wrote it): it holds no job of the queue, and obliterate must clear
-- a queue whose admin writes refuse to run over such a key (keytypes.lua).
-- It reports whether it did.
local function wrongType(key, want)
  local t = rcall("TYPE", key)["ok"]
  if t ~= "none" and t ~= want then
    rcall("DEL", key)
    return true
  end
  return false
end

local function dropList(key, withLocks)
  if budget <= 0 or wrongType(key, "list") then
    return
  end
  -- From the head, as BullMQ's removeListJobs: with a budget smaller
  -- than the list, the order the jobs go in decides the order their flow
  -- parents are released in (campaign seed 931667552).
  local ids = rcall("LRANGE", key, 0, budget - 1)
  dropIds(ids, withLocks)
  if #ids > 0 then
    rcall("LTRIM", key, #ids, -1)
  end
end

local function dropSet(key)
  if budget <= 0 or wrongType(key, "zset") then
    return
  end
  local ids = rcall("ZRANGE", key, 0, budget - 1)
  dropIds(ids, false)
  inChunks("ZREM", key, ids, 7000)
end

dropList(activeKey, true)
dropSet(delayedKey)
if budget > 0 and not wrongType(base .. "repeat", "zset") then
  local schedulers = rcall("ZRANGE", base .. "repeat", 0, -1)
  for _, sid in ipairs(schedulers) do
    rcall("DEL", base .. "repeat:" .. sid)
  end
  rcall("DEL", base .. "repeat")
end
dropSet(completedKey)
dropList(waitKey, false)
dropList(pausedKey, false)
dropSet(prioritizedKey)
dropSet(failedKey)
if budget <= 0 then
  return 1
end
-- The rate limiter stays, as BullMQ's obliterate leaves it: its window (or
-- a rateLimit) ends by its expiry.
rcall("DEL", eventsKey, base .. "delay", stalledCheckKey, stalledKey, idKey, pcKey,
  markerKey, metaKey, base .. "metrics:completed", base .. "metrics:completed:data",
  base .. "metrics:failed", base .. "metrics:failed:data")
-- The add calls' replies (addJobs, <base>add:<token>) expire by themselves
-- within a minute, and the marks of settled worker calls (settleCall,
-- <base>call:<token>) within minutes, and the cancel requests kept for
-- drover workers (<base>drover:cancels:<worker>) within a minute; delete
-- them now so nothing of the
-- queue is left. They have no index, so SCAN for them (this node only: they
-- share the slot). A user whose ACL refuses SCAN (a managed Redis) leaves
-- them to expire: the queue is gone all the same.
local escaped = string.gsub(base, "([%*%?%[%]\\])", "\\%1")
for _, kind in ipairs({"add:*", "call:*", "drover:cancels:*"}) do
  local cursor = "0"
  repeat
    local page = redis.pcall("SCAN", cursor, "MATCH", escaped .. kind, "COUNT", 1000)
    if page["err"] then
      return 0
    end
    cursor = page[1]
    for from = 1, #page[2], 5000 do
      rcall("DEL", unpack(page[2], from, math.min(from + 4999, #page[2])))
    end
  until cursor == "0"
end
return 0
