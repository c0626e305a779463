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
  -- jobState takes a stored job in no sorted set and not active for a
  -- waiting one without searching wait and paused (O(n) in the backlog).
  -- A job that finished and is in neither finished set, though, is
  -- likely an orphan (BullMQ 5.66.6's age retention left such hashes;
  -- removeOrphanedJobs deletes them): only then are the lists searched,
  -- and a job in neither is "unknown", as BullMQ's getState answers.
  if s == "waiting" and rcall("HEXISTS", base .. id, "finishedOn") == 1
    and not rcall("LPOS", waitKey, id) and not rcall("LPOS", pausedKey, id) then
    s = "unknown"
  end
  out[#out + 1] = s
end
return out
