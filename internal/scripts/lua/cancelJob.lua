-- cancelJob: cancel a job, running or not yet running, in one atomic step,
-- so a worker taking the job at the same moment either took it first (it
-- is running: the request goes to it) or finds nothing (it is failed).
--
-- Running (the job's lock is held): ask the drover worker that runs it to
-- cancel its attempt. The lock holds the running worker's token; a drover
-- token is "<worker id>:<call seq>:<job id>" (Node BullMQ's is a UUID), so
-- the message goes to that one worker's channel, and PUBLISH's receiver
-- count says whether it listens. When it does, the message is also kept for
-- a minute in the worker's request hash (keys.Queue.CancelRequests, field:
-- the token), which the worker reads every few seconds: a subscription
-- whose connection went half-open is still counted by Redis but hears
-- nothing; and where the user may not PUBLISH, the hash alone carries it.
-- Nothing else is written: the worker ends the attempt and writes its
-- result as for any other failure.
--
-- Not running (in wait, paused, prioritized or delayed): the job fails for
-- good here, as BullMQ writes a job a worker failed with UnrecoverableError,
-- less the attempt (no processedOn, ats, pb, atm, stack trace or
-- retries-exhausted: it never ran): failedReason and finishedOn set, the
-- failed set (or removed by removeOnFail), the failed event (prev: the state
-- it left), its deduplication id released, its flow parent told the child
-- failed, drained when the queue is left empty. Worker metrics do not count
-- it (no worker took part).
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 job id, 3 flags ("r": retry the job; it must be
-- running; "a": only a running job: one not locked is refused, -3; "q":
-- only a job not running: a locked one is refused, -3), 4 reason, 5 the cancel channel without its worker id
-- (keys.Queue.CancelChannel("")), 6 now ms, 7 the failedReason of a job not
-- running, 8 its removeOnFail keep spec (include/retention.lua), 9 the opts
-- JSON that spec was read from, 10 the call token and 11 its ttl ms
-- (include/once.lua: a client's resend of a call that failed a job not
-- running gets that run's reply, 3, and writes nothing).
-- Returns 1 delivered; 0 the worker holding the lock does not listen;
-- 2 the lock is not a drover worker's; 3 the job was not running and is
-- now failed; 4 its opts are not ARGV[9] (it was replaced: read it again);
-- -1 job missing; -3 neither locked nor queued (finished, active with its
-- lock expired, waiting for children), or queued and ARGV[3] has "r" or "a", or
-- locked and ARGV[3] has "q"; -8 the
-- job is a job scheduler's pending iteration (failing it would stop the
-- scheduler, which makes its next run when this one is taken; BullMQ's
-- removeJob refuses it too).
--@include common
--@include queue
--@include remove
--@include retention
--@include once
--@include keytypes

local callKey, early = onceChecked(ARGV[10])
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
local token = rcall("GET", jobKey .. ":lock")
if token then
  if string.find(ARGV[3], "q", 1, true) then
    return -3
  end
  local worker = string.match(token, "^(%x+):")
  if not worker then
    return 2
  end
  local msg = token .. "\n" .. ARGV[3] .. "\n" .. ARGV[4]
  -- A user whose ACL refuses PUBLISH (a managed Redis without @pubsub): the
  -- request is only kept, for the worker's reads of its hash (it cannot
  -- subscribe either, and reads the hash instead).
  local n = redis.pcall("PUBLISH", ARGV[5] .. worker, msg)
  if type(n) == "table" then
    n = 1
  end
  if n > 0 then
    local kept = base .. "drover:cancels:" .. worker
    rcall("HSET", kept, token, msg)
    rcall("PEXPIRE", kept, 60000)
    return 1
  end
  return 0
end

if string.find(ARGV[3], "r", 1, true) or string.find(ARGV[3], "a", 1, true) then
  return -3
end
if isSchedulerIteration(id, jobKey) then
  return -8
end
if (rcall("HGET", jobKey, "opts") or "") ~= ARGV[9] then
  return 4
end
local prev
if rcall("ZREM", delayedKey, id) == 1 then
  prev = "delayed"
elseif rcall("ZREM", prioritizedKey, id) == 1 then
  prev = "prioritized"
elseif rcall("LREM", waitKey, 1, id) > 0 or rcall("LREM", pausedKey, 1, id) > 0 then
  prev = "waiting"
else
  return -3
end

local now = tonumber(ARGV[6])
local reason = ARGV[7]
-- As BullMQ's moveToFinished, the events cap is written into meta when
-- missing.
local maxLen = maxEvents(metaKey)
--@include finished

local deid = rcall("HGET", jobKey, "deid")
if deid then
  releaseDedup(id, deid)
  requeueNext(deid, ARGV[6])
end
local parent = parentOf(jobKey)
if parent then
  childFailed(parent, jobKey, reason, now)
end
local spec = ARGV[8]
if spec == "0" then
  removeJobKeys(jobKey)
  if parent then
    -- A child failed without a failure policy still counts as pending.
    detachFromParent(jobKey, parent.key, false)
  end
else
  rcall("HSET", jobKey, "failedReason", reason, "finishedOn", ARGV[6])
  rcall("HDEL", jobKey, "defa")
  rcall("ZADD", failedKey, ARGV[6], id)
  if spec ~= "" then
    trimFinished(failedKey, spec, now)
  end
end
rcall("XADD", eventsKey, "MAXLEN", "~", maxLen, "*", "event", "failed", "jobId", id, "failedReason", reason,
  "prev", prev)
if rcall("LLEN", waitKey) == 0 and rcall("LLEN", activeKey) == 0 and rcall("ZCARD", prioritizedKey) == 0 then
  rcall("XADD", eventsKey, "*", "event", "drained")
end
onceRemember(callKey, 3, ARGV[11])
return 3
