-- getState: the states of some jobs, in BullMQ's getState order.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2.. job ids.
-- Returns one state name per id ("unknown" when the job is nowhere).
--@include common
--@include queue
--@include state

local out = {}
for i = 2, #ARGV do
  out[#out + 1] = jobState(ARGV[i])
end
return out
