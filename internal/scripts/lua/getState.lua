-- getState: the states of some jobs, in BullMQ's getState order.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2.. job ids.
-- Returns one state name per id ("unknown" when the job is nowhere).
--@include common
--@include queue
--@include state

local out = {}
for i = 2, #ARGV do
  local id = ARGV[i]
  local s = jobState(id)
  -- jobState takes a stored job in no sorted set and not active for
  -- waiting without looking in the lists; a getState answer must look,
  -- as BullMQ's does: a hash no state holds (an orphan, which
  -- removeOrphanedJobs exists to delete) is "unknown".
  if s == "waiting" and not rcall("LPOS", waitKey, id) and not rcall("LPOS", pausedKey, id) then
    s = "unknown"
  end
  out[#out + 1] = s
end
return out
