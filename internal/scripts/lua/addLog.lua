-- addLog: append a line to a job's log, keeping only the newest lines when a
-- bound is given.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 job id, 3 line, 4 lines to keep (0 = all).
-- Returns the number of log lines; -1 job missing.
--@include common
--@include queue

local jobKey = base .. ARGV[2]
if rcall("EXISTS", jobKey) == 0 then
  return -1
end
local n = rcall("RPUSH", jobKey .. ":logs", ARGV[3])
local keep = tonumber(ARGV[4])
if keep > 0 then
  rcall("LTRIM", jobKey .. ":logs", -keep, -1)
  return math.min(keep, n)
end
return n
