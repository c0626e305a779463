-- removeRateLimitKey: delete the queue's limiter key (BullMQ's
-- Queue.removeRateLimitKey, a plain DEL there).
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 the call token and 3 its ttl ms (include/once.lua:
--   go-redis resends the command when its reply is lost, and a second DEL
--   would find the key gone and answer 0 for a key the first one deleted).
-- Returns 1 deleted, 0 there was no key.
--@include common
--@include queue
--@include once

local callKey, first = onceReply(base, ARGV[2])
if first then
  return first
end
local n = rcall("DEL", limiterKey)
onceRemember(callKey, n, ARGV[3])
return n
