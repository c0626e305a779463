-- moveToActive: promote due delayed jobs, then move up to `count` ready jobs
-- (wait first, then prioritized) to active, each locked and marked started.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 now ms, 3 count, 4 lock token base, 5 lock duration ms,
--   6 worker name ("" = none), 7 worker rate limit max (0 = none), 8 worker
--   rate limit window ms (0 = none), 9 highest delayed score due now
--   (include/fetch.lua), 10 optional: "1" locks the jobs with ARGV[4]
--   itself instead of ARGV[4] .. ":" .. id (Worker.NextJob: the caller's
--   token is the lock value, as in BullMQ's getNextJob; the worker's
--   fetch does not send it), 11 optional with 10: the call's own token,
--   which settleCall marks when the reply is lost (the caller's lock
--   token names every take of its own, so it cannot name this one).
-- Returns {nextDelayedScore|false, {id1, hash1, id2, hash2, ...},
--   rateLimitTTL ms}; each hash
-- is the job as it was BEFORE activation (the caller adds processedOn = now
-- and attemptsStarted + 1, which the script wrote). A call that settleCall
-- settled (its reply was lost) writes nothing and answers an error.
--@include common
--@include queue
--@include fetch
--@include settled

local callToken = ARGV[11]
if not callToken or callToken == "" then
  callToken = ARGV[4]
end
if callSettled(callToken) then
  return redis.error_reply("SETTLED this call was settled after its reply was lost; it did nothing")
end

local fetched = fetchJobs(tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], ARGV[5], ARGV[6],
  tonumber(ARGV[7]), tonumber(ARGV[8]), nil, ARGV[10] == "1")
return {fetched[1], fetched[2], fetched[4]}
