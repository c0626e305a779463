-- reprocessJob: run a finished (completed or failed) job again, optionally
-- with fresh attempt counters. The stacktrace and attempt timeline are kept.
-- A flow child goes back into its parent's pending dependencies.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 job id, 3 state ("completed"|"failed"), 4 reset attemptsMade
--   ("1"/"0"), 5 reset attemptsStarted ("1"/"0"), 6 the call token and 7 its ttl ms
--   (include/once.lua: go-redis resends the command when its reply is
--   lost, and a second run would refuse the job the first run moved),
--   8 the latest finishedOn (ms) the job may have, or "" for any: a job that
--   finished later ran again since the caller chose it, and is refused as
--   not in the state the caller saw (-3), 9 now ms (the time of the
--   boundary a reset leaves in the attempt timeline, include/fresh.lua).
-- Returns 1; -1 job missing; -12 a worker holds the job's lock; -3 job not
-- in that state (codes: internal/scripts/errors.go).
--@include common
--@include queue
--@include parent
--@include once
--@include keytypes
--@include fresh

local callKey, early = onceChecked(ARGV[6])
if early then
  return early
end

local id = ARGV[2]
local jobKey = base .. id
local wrongJob = wrongTypeJob(jobKey)
if wrongJob then
  return wrongJob
end
if rcall("EXISTS", jobKey) == 0 then
  return -1
end
if rcall("EXISTS", jobKey .. ":lock") == 1 then
  return -12
end
local state = ARGV[3]
local setKey = state == "completed" and completedKey or failedKey
if ARGV[8] ~= "" then
  local finished = tonumber(rcall("HGET", jobKey, "finishedOn"))
  if finished and finished > tonumber(ARGV[8]) then
    return -3
  end
end
if rcall("ZREM", setKey, id) == 0 then
  return -3
end
freshBoundary(jobKey, state, ARGV[4], ARGV[5], ARGV[9])
local prop = state == "completed" and "returnvalue" or "failedReason"
local drop = {"finishedOn", "processedOn", prop}
if ARGV[4] == "1" then
  drop[#drop + 1] = "atm"
end
if ARGV[5] == "1" then
  drop[#drop + 1] = "ats"
end
rcall("HDEL", jobKey, unpack(drop))
local job = rcall("HMGET", jobKey, "priority", "opts")
local priority = jobPriority(job[1])
local lifo = false
if job[2] then
  local ok, opts = pcall(cjson.decode, job[2])
  -- BullMQ's job.retry() passes job.opts.lifo as JS reads it: a stored
  -- "false" or "0" is true, 0 and "" are false.
  local v = ok and type(opts) == "table" and opts["lifo"]
  lifo = v ~= nil and v ~= false and v ~= cjson.null and v ~= 0 and v ~= ""
end
pushReady(waitKey, prioritizedKey, pcKey, id, priority, lifo)
addBaseMarker(markerKey, pausedOrMaxed(metaKey, activeKey))
moveChildBack(jobKey, state)
rcall("XADD", eventsKey, "MAXLEN", "~", maxEvents(metaKey), "*", "event", "waiting", "jobId", id, "prev", state)
onceRemember(callKey, 1, ARGV[7])
return 1
