-- settleCall: learn what a worker call (moveToActive or finishJobs) whose
-- reply was lost did, and make sure it does nothing more. The worker sends
-- each of those calls once (no client resend); when the answer is lost it
-- cannot tell whether the call ran, so it asks here instead of sending the
-- call again, which would fetch more jobs and leave the first run's ones in
-- active with nobody running them.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 the call's lock token base, 3 ms to keep the call marked
--   settled (include/settled.lua: a late copy of the call then writes
--   nothing), 4 record count n, then n pairs (job id, job lock token) of the
--   call's finish records (none for moveToActive), then, optional, the
--   lock of a manual call's take (moveToActive's ARGV[10], finishJobs'
--   manual fetch-next lock) and the call's now ms: a job active under
--   exactly that lock whose processedOn is that now is the one the call
--   took (the caller's lock names its other takes too; they started at
--   other times).
-- Returns {{id, hash, ...}, {code, ...}}: the jobs the call fetched, still
--   active under their lock (each hash as moveToActive returns it, as it
--   was BEFORE activation: ats one less), and per record 1 when the job is
--   still active under the record's lock (the call did not end that attempt,
--   or refused its completion: send it again), 0 when the call ended it
--   (its lock is gone and it left active), -2 lock missing (the job is still
--   active: the lock expired, nothing was written) or -6 lock taken
--   (another worker holds it).
--@include common
--@include queue

local token = ARGV[2]
rcall("SET", base .. "call:" .. token, "settled", "PX", ARGV[3])
local n = tonumber(ARGV[4])
local exact = ARGV[5 + 2 * n]
local exactAt = ARGV[6 + 2 * n]
if exact == "" then
  exact = nil
end

local active = rcall("LRANGE", activeKey, 0, -1)
local isActive = {}
local fetched = {}
local mine = token .. ":"
for from = 1, #active, 1000 do
  local ids = {}
  local lockKeys = {}
  for i = from, math.min(from + 999, #active) do
    local id = active[i]
    isActive[id] = true
    ids[#ids + 1] = id
    lockKeys[#lockKeys + 1] = base .. id .. ":lock"
  end
  local locks = rcall("MGET", unpack(lockKeys))
  for i = 1, #ids do
    local id = ids[i]
    if locks[i] == mine .. id or
        (exact and locks[i] == exact and rcall("HGET", base .. id, "processedOn") == exactAt) then
      local hash = rcall("HGETALL", base .. id)
      for f = 1, #hash, 2 do
        if hash[f] == "ats" then
          hash[f + 1] = tostring(tonumber(hash[f + 1]) - 1)
        end
      end
      fetched[#fetched + 1] = id
      fetched[#fetched + 1] = hash
    end
  end
end

local codes = {}
for i = 1, n do
  local id = ARGV[3 + 2 * i]
  local lock = rcall("GET", base .. id .. ":lock")
  if lock == ARGV[4 + 2 * i] then
    codes[i] = 1
  elseif lock == mine .. id then
    -- The call ended this attempt (a retry now: back to wait) and then
    -- took the job again itself.
    codes[i] = 0
  elseif lock then
    codes[i] = -6
  elseif isActive[id] then
    codes[i] = -2
  else
    codes[i] = 0
  end
end
return {fetched, codes}
