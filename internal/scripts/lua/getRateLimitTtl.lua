-- getRateLimitTtl: how long (ms) the queue's limiter key still refuses
-- activations, read as BullMQ's Queue.getRateLimitTtl reads it.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 maxJobs ("0": none given).
-- With a maxJobs (given, else meta "max"), the key blocks only once its
-- count reached maxJobs: then its PTTL (> 0), else 0; a key whose PTTL reads
-- 0 is deleted. With neither, the raw PTTL is returned (-2: no key, -1: a
-- key without expiry).
--@include common
--@include queue

local maxJobs = tonumber(ARGV[2])
if maxJobs == 0 then
  maxJobs = tonumber(rcall("HGET", metaKey, "max"))
  if not maxJobs then
    return rcall("PTTL", limiterKey)
  end
end
local used = tonumber(rcall("GET", limiterKey)) or 0
if maxJobs <= used then
  local pttl = rcall("PTTL", limiterKey)
  if pttl == 0 then
    rcall("DEL", limiterKey)
  elseif pttl > 0 then
    return pttl
  end
end
return 0
