-- activate.lua: what taking one job does once it is in active (fetch.lua's
-- fetchJobs, and finishJobs' single job, which takes its next job before
-- any other helper is made). Expects prologue.lua and queue.lua in scope.

-- activate locks job id (key jobKey, its fields hash as HGETALL returned
-- them, never empty) with lock for lockDuration ms, writes its attempt's
-- start and the active event, and counts it in the rate limiter when
-- maxJobs is set (window: the limiter's window, ms).
local function activate(id, jobKey, hash, lock, lockDuration, workerName, nowText, maxJobs, window)
  local ats = "1"
  local deferred = false
  for f = 1, #hash, 2 do
    if hash[f] == "ats" then
      -- A value that is no finite number in int64's range (another
      -- tool's "abc") counts as 0, as the job decoder reads it:
      -- BullMQ's HINCRBY fails there and strands the job in active.
      local n = tonumber(hash[f + 1])
      if not (n and n >= -9223372036854775808 and n < 9223372036854775808) then
        n = 0
      end
      -- tostring: cheaper than the %.17g redis.call applies to a
      -- number, but still a printf; a first attempt needs none.
      ats = tostring(n + 1)
    elseif hash[f] == "defa" then
      deferred = true
    end
  end
  -- A job that will be failed without running does not use the limit.
  if maxJobs and not deferred and rcall("INCR", limiterKey) == 1 then
    rcall("PEXPIRE", limiterKey, math.floor(math.abs(window)))
  end
  -- GET: the reply is the old value, nearly always none (a nil, which
  -- Lua gets as false); a plain SET's "OK" reaches Lua as a new table.
  rcall("SET", jobKey .. ":lock", lock, "PX", lockDuration, "GET")
  if workerName ~= "" then
    rcall("HSET", jobKey, "processedOn", nowText, "ats", ats, "pb", workerName)
  else
    rcall("HSET", jobKey, "processedOn", nowText, "ats", ats)
  end
  rcall("XADD", eventsKey, "*", "event", "active", "jobId", id, "prev", "waiting")
end
