-- extendLocks: renew the locks a worker holds, and clear them from the
-- stalled candidates so the stalled checker leaves them alone.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 lock duration ms, 3 the worker's id or "" (manual
--   callers), 4 the lifetime ms of its wake key, then pairs of job id, token.
-- The worker's wake key ("marker:<worker id>") gets its lifetime again: a
-- wake-up written while the worker is busy stays until its fetcher pops it,
-- and one a killed worker left expires (PEXPIRE of a missing key does
-- nothing). After the locks: the lock's SET must be the first write, which
-- Redis refuses when out of memory (noeviction), as the worker's fetch
-- gate expects; a PEXPIRE before it would let the script write.
-- Returns {id, reason, ...} for every lock not extended; reason is "missing"
-- (no lock: it expired) or "taken" (another token holds it).
--@include common
--@include queue

local duration = ARGV[2]
local lost = {}
for i = 5, #ARGV, 2 do
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
if ARGV[3] ~= "" then
  rcall("PEXPIRE", base .. "marker:" .. ARGV[3], ARGV[4])
end
return lost
