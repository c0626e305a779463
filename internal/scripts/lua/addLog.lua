-- addLog: append a line to a job's log, keeping only the newest lines when a
-- bound is given.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 job id, 3 line, 4 lines to keep (0 = all), 5 the call
--   token and 6 its ttl ms (include/once.lua: go-redis resends the command
--   when its reply is lost, and a second run would append the line again).
-- Returns the number of log lines; -1 job missing.
--@include common
--@include queue
--@include once

local callKey, first = onceReply(base, ARGV[5])
if first then
  return first
end

local jobKey = base .. ARGV[2]
if rcall("EXISTS", jobKey) == 0 then
  return -1
end
local n = rcall("RPUSH", jobKey .. ":logs", ARGV[3])
local keep = tonumber(ARGV[4])
if keep > 0 then
  rcall("LTRIM", jobKey .. ":logs", -keep, -1)
  n = math.min(keep, n)
end
onceRemember(callKey, n, ARGV[6])
return n
