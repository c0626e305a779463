-- getCounts: how many jobs each state holds, read atomically.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2.. state names (waiting, paused, active, delayed,
--   prioritized, completed, failed, waiting-children).
-- Returns one count per state name (0 for an unknown name).
-- A pre-v5 marker ("0:<n>", never a job) at the tail of wait or paused is
-- dropped as it is counted, as BullMQ 6.7's getCounts does: one per list
-- and read, and not when it is the list's only entry (that list counts 0).
-- The count leaves the marker out also when the drop is refused (a Redis
-- user without write rights).
--@include common
--@include queue
--@include states

local lists, sets = stateLists, stateSets
local out = {}
for i = 2, #ARGV do
  local s = ARGV[i]
  local list = lists[s]
  if list then
    local n = rcall("LLEN", list)
    if s ~= "active" and n > 0 then
      local tail = rcall("LINDEX", list, -1)
      if string.sub(tail, 1, 2) == "0:" then
        if n > 1 then
          -- pcall: a user without write rights (a read-only dashboard)
          -- still gets the counts; the marker then stays.
          redis.pcall("RPOP", list)
        end
        n = n - 1
      end
    end
    out[#out + 1] = n
  elseif sets[s] then
    out[#out + 1] = rcall("ZCARD", sets[s])
  else
    out[#out + 1] = 0
  end
end
return out
