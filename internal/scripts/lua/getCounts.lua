-- getCounts: how many jobs each state holds, read atomically.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2.. state names (waiting, paused, active, delayed,
--   prioritized, completed, failed, waiting-children).
-- Returns one count per state name (0 for an unknown name).
--@include common
--@include queue
--@include states

local lists, sets = stateLists, stateSets
local out = {}
for i = 2, #ARGV do
  local s = ARGV[i]
  if lists[s] then
    out[#out + 1] = rcall("LLEN", lists[s])
  elseif sets[s] then
    out[#out + 1] = rcall("ZCARD", sets[s])
  else
    out[#out + 1] = 0
  end
end
return out
