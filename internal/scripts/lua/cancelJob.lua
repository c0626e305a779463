-- cancelJob: ask the drover worker that runs a job to cancel its attempt.
-- The lock holds the running worker's token; a drover token is
-- "<worker id>:<call seq>:<job id>" (Node BullMQ's is a UUID), so the
-- message goes to that one worker's channel, and PUBLISH's receiver count
-- says whether it listens. Nothing is written: the worker ends the attempt
-- and writes its result as for any other failure.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 job id, 3 flags ("r": retry the job), 4 reason,
-- 5 the cancel channel without its worker id (keys.Queue.CancelChannel("")).
-- Returns 1 delivered; 0 the worker holding the lock does not listen;
-- 2 the lock is not a drover worker's; -1 job missing; -3 job not locked
-- (not active, or active with its lock expired).
--@include common
--@include queue

local id = ARGV[2]
if rcall("EXISTS", base .. id) == 0 then
  return -1
end
local token = rcall("GET", base .. id .. ":lock")
if not token then
  return -3
end
local worker = string.match(token, "^(%x+):")
if not worker then
  return 2
end
local n = rcall("PUBLISH", ARGV[5] .. worker, token .. "\n" .. ARGV[3] .. "\n" .. ARGV[4])
if n > 0 then
  return 1
end
return 0
