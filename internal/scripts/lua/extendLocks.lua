-- extendLocks: renew the locks a worker holds, and clear them from the
-- stalled candidates so the stalled checker leaves them alone.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 lock duration ms, then pairs of job id, token.
-- Returns {id, reason, ...} for every lock not extended; reason is "missing"
-- (no lock: it expired) or "taken" (another token holds it).
--@include common
--@include queue

local duration = ARGV[2]
local lost = {}
for i = 3, #ARGV, 2 do
  local id = ARGV[i]
  local lockKey = base .. id .. ":lock"
  local cur = rcall("GET", lockKey)
  if cur == ARGV[i + 1] then
    rcall("SET", lockKey, cur, "PX", duration)
    rcall("SREM", stalledKey, id)
  else
    lost[#lost + 1] = id
    lost[#lost + 1] = cur and "taken" or "missing"
  end
end
return lost
