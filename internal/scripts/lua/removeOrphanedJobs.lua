-- removeOrphanedJobs: delete (or only count) the keys of those candidate
-- jobs that no state of the queue holds (BullMQ's removeOrphanedJobs, a
-- clean-up for job hashes a retention bug of BullMQ 5.66 left behind). The
-- caller found the candidates by SCAN; this script decides each one
-- atomically, so a job added, moved or finished meanwhile is seen where it is now.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 at most this many orphans (0 = no bound), 3 "1" delete
-- them, "0" only count them, 4 the call token ("" = none) and 5 its ttl
-- ms (include/once.lua: go-redis resends the command when its reply is
-- lost, and a second run would find the orphans deleted and answer 0),
-- 6.. job ids.
-- Returns how many orphans it found (with keys to delete).
--@include common
--@include queue
--@include once

local callKey, first = onceReply(base, ARGV[4])
if first then
  return first
end

local limit = tonumber(ARGV[2])
local remove = ARGV[3] == "1"
-- Sorted sets and the stalled set answer in O(1) or O(log n); the lists
-- (an O(n) LPOS each) are asked only about ids no set holds.
local sortedSets = {prioritizedKey, delayedKey, waitingChildrenKey, completedKey, failedKey}
local lists = {waitKey, activeKey, pausedKey}
local found = 0
for i = 6, #ARGV do
  if limit > 0 and found >= limit then
    break
  end
  local id = ARGV[i]
  local held = rcall("SISMEMBER", stalledKey, id) == 1
  for _, key in ipairs(sortedSets) do
    if held then
      break
    end
    held = rcall("ZSCORE", key, id) ~= false
  end
  for _, key in ipairs(lists) do
    if held then
      break
    end
    held = rcall("LPOS", key, id) ~= false
  end
  if not held then
    local jobKey = base .. id
    local cmd = remove and "DEL" or "EXISTS"
    if rcall(cmd, jobKey, jobKey .. ":logs", jobKey .. ":dependencies", jobKey .. ":processed",
        jobKey .. ":failed", jobKey .. ":unsuccessful", jobKey .. ":lock") > 0 then
      found = found + 1
    end
  end
end
onceRemember(callKey, found, ARGV[5])
return found
