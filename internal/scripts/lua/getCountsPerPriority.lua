-- getCountsPerPriority: how many ready jobs each priority has, read
-- atomically (BullMQ's Queue.getCountsPerPriority). Priority 0 is the
-- length of the wait list (where a paused queue's jobs stay too); any other
-- priority counts the prioritized set's scores in [p << 32, (p + 1) << 32),
-- the band the priority score formula gives that priority.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2.. priorities (0 .. 2^21-1, checked by the caller).
-- Returns one count per priority, in ARGV order.
--@include common
--@include queue

local band = 4294967296
local out = {}
for i = 2, #ARGV do
  local p = tonumber(ARGV[i])
  if p == 0 then
    out[#out + 1] = rcall("LLEN", waitKey)
  else
    out[#out + 1] = rcall("ZCOUNT", prioritizedKey, p * band, (p + 1) * band - 1)
  end
end
return out
