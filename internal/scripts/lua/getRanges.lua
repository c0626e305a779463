-- getRanges: job ids of some states, page by page, like BullMQ's getRanges.
-- Lists are newest first when descending (producers LPUSH); ascending reads the
-- mirrored range from the tail. Sets are ordered by score.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 start, 3 end, 4 "1" ascending / "0" descending, 5.. states.
-- Returns one list of ids per state.
--@include common
--@include queue
--@include states

local start = tonumber(ARGV[2])
local stop = tonumber(ARGV[3])
local asc = ARGV[4] == "1"
local lists, sets = stateLists, stateSets
local out = {}
for i = 5, #ARGV do
  local s = ARGV[i]
  local ids = {}
  if lists[s] then
    if asc then
      -- Index i of the ascending order is -(i + 1) of the list, as in
      -- BullMQ; -1 (the last) maps to 0, never to -0, which LRANGE refuses.
      local from = stop == -1 and 0 or -(stop + 1)
      local to = start == -1 and 0 or -(start + 1)
      ids = rcall("LRANGE", lists[s], from, to)
      local rev = {}
      for j = #ids, 1, -1 do
        rev[#rev + 1] = ids[j]
      end
      ids = rev
    else
      ids = rcall("LRANGE", lists[s], start, stop)
    end
  elseif sets[s] then
    if asc then
      ids = rcall("ZRANGE", sets[s], start, stop)
    else
      ids = rcall("ZREVRANGE", sets[s], start, stop)
    end
  end
  out[#out + 1] = ids
end
return out
