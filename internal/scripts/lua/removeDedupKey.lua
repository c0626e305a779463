-- removeDedupKey: free a deduplication id only while it still names the
-- given job, so a call made after the id passed to a newer job leaves that
-- job's claim alone (BullMQ's Job.removeDeduplicationKey), or, with no job
-- id, whatever job holds it (BullMQ's Queue.removeDeduplicationKey, a plain
-- DEL there). Only the de: key goes, as in BullMQ; a kept next add (dn:)
-- is not touched.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 job id ("" = any holder), 3 deduplication id ("" = the
--   job's stored deid; required without a job id), 4 the call token and 5
--   its ttl ms (include/once.lua: go-redis resends the command when its
--   reply is lost, and a second run would find the id freed already and
--   answer 0).
-- Returns 1 removed, 0 not (no id, or the id names another job or none).
--@include common
--@include queue
--@include once

local callKey, first = onceReply(base, ARGV[4])
if first then
  return first
end

local id = ARGV[2]
local deid = ARGV[3]
if deid == "" and id ~= "" then
  deid = rcall("HGET", base .. id, "deid") or ""
end
local n = 0
if deid ~= "" then
  local dedupKey = base .. "de:" .. deid
  if id == "" or rcall("GET", dedupKey) == id then
    n = rcall("DEL", dedupKey)
  end
end
-- A "not freed" is kept too: a resend after another job took the id
-- would otherwise free that job's claim.
onceRemember(callKey, n, ARGV[5])
return n
