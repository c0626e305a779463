-- finishJobs: end the current attempt of a batch of active jobs, then fetch
-- the next jobs for the freed slots, all in one atomic step.
-- Each job needs its lock token; a job whose lock is gone or held by another
-- token, or that is no longer active, is left untouched and reported.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 now ms, 3 fetch count, 4 lock token base, 5 lock duration
--   ms, 6 worker name, 7 worker rate limit max, 8 worker rate limit window ms,
--   9 highest delayed score due now (include/fetch.lua), 10 job count n,
--   11 metrics data points (0: the worker keeps no metrics; else jobs
--   finished for good are counted, include/metrics.lua), 12 the manual
--   fetch-next lock ("" = none: each fetched job is locked with token base
--   .. ":" .. id; else the one job fetched is locked with this value, and
--   only when the one record was done, as BullMQ's moveToFinished with
--   fetchNext fetches only after it finished the job), then n records in the order of finishRecord (internal/scripts/wrappers.go),
--   which also writes the REC table of offsets below when the script is
--   loaded. A record's head (REC_HEAD fields): id, token, kind, value,
--   attemptsMade after this attempt, keep spec (include/retention.lua),
--   more ("1": the tail follows; a plain completion sends none; "p": none,
--   but look for a parent a flow gave the job while it ran). Its tail
--   (up to REC_FIELDS): stacktrace JSON ("" = unchanged), delay ms, lifo
--   ("1"/"0"), attempts allowed, attempt timeline JSON ("" = unchanged),
--   deduplication id the job owns ("" = none), "1" when the job is a child
--   of a flow (its parent is updated when it finishes, see parent.lua), due
--   time ms for "d"/"m" (the caller's attempt end + delay, so the score and
--   the attempt timeline name the same instant), the failure's trace
--   context for "f"/"r"/"d" ("" = none; stored as the job hash field tm,
--   as BullMQ's telemetry does on moveToFailed).
--   kind: "c" completed (value = returnvalue JSON), "f" failed for good
--   (value = failedReason), "r" retry now, "d" retry after `delay` (both
--   value = failedReason), "w" back to wait without spending an attempt
--   (worker shutdown, value "shutdown": a worker is woken for it even when
--   it goes back to prioritized; the rate limiter; Job.MoveToWait), "m" moved to delayed by the processor itself (no
--   attempt spent, like BullMQ's DelayedError).
-- Returns {codes, nextDelayedScore|false, {id, hash, ...}, rateLimitTTL ms}
--   (rateLimitTTL: the fetch's; when it fetched nothing and a job went back
--   to wait, the limiter key's remaining time, 0 without one)
--   where codes is n when every job is done (0), else a list whose codes[i] is
--   0 done, -1 job missing, -2 lock missing, -3 not active, -6 lock taken,
--   -4 (completion only) the job still has pending children, -9 (completion
--   only) a child failed with failParentOnFailure: the job is left active
--   and locked, and the caller fails the attempt instead, as BullMQ does.
--   -4 and -9 win over -2 and -6, as in BullMQ's moveToFinished, which
--   looks at the children before the lock. The call stops at its first -4
--   or -9: every record after it is -16 (not reached: nothing written, the
--   job still active and locked, for the caller to send again after that
--   failure), and a call with a refusal fetches nothing.
-- A finished job that owns a deduplication id with a next job stored for it
-- (keepLastIfActive) queues that job; see requeueNext.
-- A call that settleCall settled (its reply was lost) writes nothing and
-- answers an error (include/settled.lua).
--@include prologue
--@include queuefirst
--@include activate
--@record finish

-- One read of the meta hash serves the event cap here and the fetch below:
-- meta is {events cap, paused, concurrency, max, duration}, false where the
-- field is absent. HGETALL and a loop cost less than HMGET of the five
-- (callgrind, a call of 5 finishes and 5 fetches: 5k less): the meta hash
-- holds a handful of fields, and each name handed to redis.call is a
-- string Redis makes anew.
local meta = {false, false, false, false, false}
do
  local all = rcall("HGETALL", metaKey)
  for f = 1, #all, 2 do
    local name = all[f]
    if name == "opts.maxLenEvents" then
      meta[1] = all[f + 1]
    elseif name == "paused" then
      meta[2] = all[f + 1]
    elseif name == "concurrency" then
      meta[3] = all[f + 1]
    elseif name == "max" then
      meta[4] = all[f + 1]
    elseif name == "duration" then
      meta[5] = all[f + 1]
    end
  end
end
-- Without the cap in meta, BullMQ's default, written into meta once a job
-- of the batch moves (BullMQ's moveToFinished trims the stream through
-- getOrSetMaxEvents; its retryJob, moveToDelayed and
-- moveJobFromActiveToWait call that too). A refused call writes nothing.
local maxLen = meta[1] or "10000"

-- The single plain completion: a worker at concurrency 1 finishes one job
-- per call and takes the next. It goes straight through here, before any
-- helper exists (Redis makes every top-level function of a script anew on
-- each call, about 1,000 instructions each, and the batch path's tables
-- and loops cost more than the job's own commands), writing exactly what
-- the batch path below writes for it, in the same order. Anything else
-- (a lock that is not this call's, a child pending or failed, a parent
-- from a flow, a job not in active, a settled call) is found by reads
-- alone, and then the batch path does the whole call. single: the job
-- (or the batch below) was finished here; singleTrim: its keep spec, when
-- the completed set is to be trimmed (by the batch path's helper, before
-- the job's event).
--
-- A batch of plain completions (a worker at concurrency 10 sends about
-- five a call) goes straight through the same way: the batch path's
-- tables, loops and helpers cost about 100,000 instructions a call more
-- than these lines (callgrind, the whole call with the fetch of as many
-- jobs: 2 jobs 453k in the batch path against 390k here, 5 jobs 860k
-- against 752k, 10 jobs 1,516k against 1,402k; one job alone 213k). It
-- writes the batch path's commands in its order for such a batch (the
-- locks and children read, the jobs out of active, the locks and stalled
-- entries deleted, each job's fields and event, with one XTRIM before the
-- last job's, the completed
-- set's ZADD before the last job's event; the completed set's trims, for
-- keep specs other than keep-all and remove, then run with the batch
-- path's helper before that event). When a job is found gone from active
-- after others were taken out, removedHere hands what was taken out to
-- the batch path, which goes on from there (it reads the same locks and
-- children again: nothing else was written).
local single = false
local singleTrim = nil
-- fetched: what the fetch took, when the single path's fetch ended
-- without a job; waitTried: its LMOVE found no job in wait; popped: the
-- ids its RPOP took when it took fewer than it asked for (fetchJobs goes
-- on from the prioritized set with them).
local fetched = nil
local waitTried = false
local popped = nil
local removedHere = nil
-- straightTrims: {trims, id, value} when the straight batch path left the
-- completed set's trims and its last job's event to the helpers.
local straightTrims = nil
do
  local sized = nil
  local o = 12
  local more = ARGV[o + REC.more]
  local count = ARGV[10]
  -- (Numbers are compared as the text Go sends: tonumber costs a strtod.)
  if count == "1" and ARGV[o + REC.kind] == "c" and more ~= "1" then
    local id = ARGV[o + REC.id]
    local jobKey = base .. id
    local lockKey = jobKey .. ":lock"
    local locks = rcall("MGET", lockKey, base .. "call:" .. ARGV[4])
    if not locks[2] and locks[1] == ARGV[o + REC.token]
        and rcall("EXISTS", jobKey .. ":dependencies", jobKey .. ":unsuccessful") == 0
        and (more ~= "p" or rcall("HEXISTS", jobKey, "parentKey") == 0)
        and rcall("LREM", activeKey, "-1", id) > 0 then
      single = true
      rcall("DEL", lockKey)
      rcall("SREM", stalledKey, id)
      if not meta[1] then
        rcall("HSET", metaKey, "opts.maxLenEvents", maxLen)
      end
      local spec = ARGV[o + REC.keep]
      if spec == "0" then
        rcall("DEL", jobKey, jobKey .. ":logs", jobKey .. ":processed", jobKey .. ":failed")
      else
        rcall("HSET", jobKey, "atm", ARGV[o + REC.attemptsMade], "returnvalue", ARGV[o + REC.value], "finishedOn", ARGV[2])
        rcall("ZADD", completedKey, ARGV[2], id)
        if spec ~= "" then
          singleTrim = spec
        end
      end
      -- BullMQ's moveToFinished trims the stream before it writes the
      -- job's events, which it adds untrimmed.
      rcall("XTRIM", eventsKey, "MAXLEN", "~", maxLen)
      if not singleTrim then
        rcall("XADD", eventsKey, "*", "event", "completed", "jobId", id,
          "returnvalue", ARGV[o + REC.value], "prev", "active")
      end
    end
  end
  -- A batch of plain completions (see above): no exact lock (a manual
  -- finish sends one record), every record's head alone.
  local cnt = count ~= "1" and ARGV[12] == "" and tonumber(count)
  if cnt and cnt >= 2 then
    -- sized returns a new table whose array part holds n items (up to 64)
    -- from the start: a table filled one item at a time is rehashed at 1,
    -- 2, 4, 8, ... items (callgrind, a call of 5 jobs: 771k -> 755k; of 37:
    -- 4,910k -> 4,874k). Made here, not for the single job.
    sized = function(n)
      if n <= 8 then
        return {nil, nil, nil, nil, nil, nil, nil, nil}
      elseif n <= 16 then
        return {nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil}
      elseif n <= 32 then
        return {nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
          nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil}
      end
      return {nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
        nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
        nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil,
        nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil, nil}
    end
    local ids, jobKeys, lockKeys = sized(cnt), sized(cnt), sized(cnt + 1)
    local ok = true
    -- anyP: a record asks to look for a parent (more "p").
    local anyP = false
    -- One keep spec for every job, with no age limit (see noteTrim): the
    -- trim once before the last event is what BullMQ's trims per job leave.
    local spec1 = ARGV[o + REC.keep]
    if string.find(spec1, "^%-?%d+,%-?%d+,[1-9]") then
      ok = false
    end
    for i = 1, ok and cnt or 0 do
      local more = ARGV[o + REC.more]
      if ARGV[o + REC.kind] ~= "c" or more == "1" or ARGV[o + REC.keep] ~= spec1 then
        ok = false
        break
      end
      if more == "p" then
        anyP = true
      end
      local id = ARGV[o + REC.id]
      local jobKey = base .. id
      ids[i] = id
      jobKeys[i] = jobKey
      lockKeys[i] = jobKey .. ":lock"
      o = o + REC_HEAD
    end
    if ok then
      lockKeys[cnt + 1] = base .. "call:" .. ARGV[4]
      local locks = rcall("MGET", unpack(lockKeys))
      lockKeys[cnt + 1] = nil
      ok = not locks[cnt + 1]
      o = 12
      local probe = sized(2 * cnt)
      for i = 1, cnt do
        if locks[i] ~= ARGV[o + REC.token] then
          ok = false
          break
        end
        probe[2 * i - 1] = jobKeys[i] .. ":dependencies"
        probe[2 * i] = jobKeys[i] .. ":unsuccessful"
        o = o + REC_HEAD
      end
      ok = ok and rcall("EXISTS", unpack(probe)) == 0
    end
    if ok and anyP then
      o = 12
      for i = 1, cnt do
        if ARGV[o + REC.more] == "p" and rcall("HEXISTS", jobKeys[i], "parentKey") == 1 then
          ok = false
          break
        end
        o = o + REC_HEAD
      end
    end
    if ok then
      -- Out of active as the batch path takes them out (see there).
      local removed = sized(cnt)
      local activeLen = cnt >= 8 and rcall("LLEN", activeKey) or 0
      if cnt >= 8 and activeLen <= 16 * cnt then
        local leaving = {}
        for i = 1, cnt do
          leaving[ids[i]] = i
        end
        local stay = sized(activeLen - cnt)
        local list = rcall("LRANGE", activeKey, "0", "-1")
        for k = 1, #list do
          local id = list[k]
          local i = leaving[id]
          if i and not removed[i] then
            removed[i] = true
          else
            stay[#stay + 1] = id
          end
        end
        rcall("DEL", activeKey)
        for from = 1, #stay, 5000 do
          rcall("RPUSH", activeKey, unpack(stay, from, math.min(from + 4999, #stay)))
        end
      else
        for i = 1, cnt do
          if rcall("LREM", activeKey, "-1", ids[i]) > 0 then
            removed[i] = true
          end
        end
      end
      for i = 1, cnt do
        if not removed[i] then
          ok = false
        end
      end
      if not ok then
        removedHere = removed
      end
    end
    if ok then
      single = true
      rcall("DEL", unpack(lockKeys))
      rcall("SREM", stalledKey, unpack(ids))
      if not meta[1] then
        rcall("HSET", metaKey, "opts.maxLenEvents", maxLen)
      end
      local add = sized(2 * cnt)
      -- (Counted here: #add is a search of the table on each use.)
      local na = 0
      -- The completed set's trims (keep specs other than keep-all and
      -- remove), keyed as the batch path's noteTrim keys them, so they run
      -- in its order; they run with its helper, before the last job's
      -- event (straightTrims, below).
      local trims = nil
      o = 12
      for i = 1, cnt do
        local id, jobKey, value = ids[i], jobKeys[i], ARGV[o + REC.value]
        local spec = ARGV[o + REC.keep]
        if i == cnt then
          -- BullMQ's moveToFinished trims the stream before each job's
          -- event: the last trim decides what the stream keeps (a trim
          -- with more entries removes every node an earlier one would),
          -- so one XTRIM before the last job's event leaves its state.
          rcall("XTRIM", eventsKey, "MAXLEN", "~", maxLen)
        end
        if spec == "0" then
          rcall("DEL", jobKey, jobKey .. ":logs", jobKey .. ":processed", jobKey .. ":failed")
        else
          rcall("HSET", jobKey, "atm", ARGV[o + REC.attemptsMade], "returnvalue", value, "finishedOn", ARGV[2])
          na = na + 2
          add[na - 1] = ARGV[2]
          add[na] = id
          if spec ~= "" then
            trims = trims or {}
            trims[completedKey .. "\n" .. spec] = {completedKey, spec}
          end
        end
        if i == cnt and na > 0 then
          rcall("ZADD", completedKey, unpack(add))
        end
        if i == cnt and trims then
          straightTrims = {trims, id, value}
        else
          rcall("XADD", eventsKey, "*", "event", "completed", "jobId", id, "returnvalue", value, "prev", "active")
        end
        o = o + REC_HEAD
      end
    end
  end
  -- Its next jobs, as fetchJobs takes them when the queue is neither
  -- paused nor at a global concurrency, no rate limit applies, no delayed
  -- job is due and the worker keeps no metrics (they are counted before
  -- the fetch): one with LMOVE, more with RPOP and LPUSH. When wait has
  -- too few, fetchJobs goes on from the prioritized set.
  local want = ARGV[3]
  if single and not singleTrim and not straightTrims and want ~= "0" and ARGV[11] == "0"
      and not meta[2] and not meta[3] and not meta[4] and ARGV[7] == "0"
      and not rcall("ZRANGEBYSCORE", delayedKey, "0", ARGV[9], "LIMIT", "0", "1")[1] then
    if want == "1" then
      local id = rcall("LMOVE", waitKey, activeKey, "RIGHT", "LEFT")
      if id and string.sub(id, 1, 2) ~= "0:" then
        local jobKey = base .. id
        local hash = rcall("HGETALL", jobKey)
        if #hash > 0 then
          local exactLock = ARGV[12]
          activate(id, jobKey, hash, exactLock ~= "" and exactLock or ARGV[4] .. ":" .. id, ARGV[5], ARGV[6], ARGV[2], nil, 0)
          return {count == "1" and 1 or tonumber(count), false, {id, hash}, 0}
        end
        -- A listed id without a job hash cannot be worked: drop it.
        rcall("LREM", activeKey, 1, id)
        fetched = {false, {}, false, 0}
      else
        if id then
          -- A pre-v5 marker, never a job: take it out of active again.
          rcall("LREM", activeKey, 1, id)
        end
        waitTried = true
      end
    elseif tonumber(want) > 1 then
      -- want as Go sent it: a number handed to redis.call is printed.
      local ids = rcall("RPOP", waitKey, want) or {}
      for i = #ids, 1, -1 do
        -- "0:<n>" entries are pre-v5 markers, never jobs: drop them.
        -- (string.byte makes no string, string.sub one per id.)
        local c1, c2 = string.byte(ids[i], 1, 2)
        if c1 == 48 and c2 == 58 then
          table.remove(ids, i)
        end
      end
      if #ids < tonumber(want) then
        popped = ids
      else
        rcall("LPUSH", activeKey, unpack(ids))
        local out = sized and sized(2 * #ids) or {}
        local no = 0
        for i = 1, #ids do
          local id = ids[i]
          local jobKey = base .. id
          local hash = rcall("HGETALL", jobKey)
          if #hash == 0 then
            -- A listed id without a job hash cannot be worked: drop it, never lock it.
            rcall("LREM", activeKey, 1, id)
          else
            local exactLock = ARGV[12]
            activate(id, jobKey, hash, exactLock ~= "" and exactLock or ARGV[4] .. ":" .. id, ARGV[5], ARGV[6], ARGV[2], nil, 0)
            no = no + 2
            out[no - 1] = id
            out[no] = hash
          end
        end
        if no > 0 then
          return {cnt or 1, false, out, 0}
        end
        fetched = {false, out, false, 0}
      end
    end
  end
end

local now = tonumber(ARGV[2])
local n = tonumber(ARGV[10])
local fetchCount = tonumber(ARGV[3])

--@include queue
--@include common
--@include fetch
--@include metrics

local codes
local trims = {}
local delayed = false
-- requeued: a job went back to wait ("w"). The caller may have to wait for
-- the rate limiter (a processor's RateLimitError), so the reply carries the
-- limiter's remaining time, read in this same step.
local requeued = false
-- lastFinal: the batch's last job completed or failed for good. BullMQ
-- writes "drained" only from moveToFinished, so a batch that ends with a
-- retry, a move back or a delay leaves the queue empty without one.
local lastFinal = false
-- The jobs finished for good, for the metrics; anyOwned: a job of the
-- batch was this call's (so it wrote, see fetchJobs' moveOne).
local completedN, failedN = 0, 0
local anyOwned = single
-- refused: completions refused for a pending (-4) or failed (-9) child.
-- The call stops at the first (see the cut below) and fetches nothing:
-- the caller fails that attempt next, with the records after it, in a
-- call that fetches for every slot, as BullMQ's moveToFinished refuses
-- before it fetches and its moveToFailed(fetchNext) fetches after the
-- failure (a first write that took a next job wrote its events before the
-- refused job failed or went back to wait, campaign seeds 969489722 and
-- 10213).
local refused = 0

-- cold() builds the helpers of flows (a child's parent), deduplication
-- and retention trims on a call's first need of them. A batch of plain
-- completions needs none, and Redis makes every top-level function of a
-- script anew on each call: a closure, its upvalues looked up one by one.
local coldHelpers
local function cold()
  if coldHelpers then
    return coldHelpers
  end
  --@include parent
  --@include retention

  --@include finished

  coldHelpers = {parentOf = parentOf, childCompleted = childCompleted, childFailed = childFailed,
    detachFromParent = detachFromParent, trimFinished = trimFinished,
    releaseDedup = releaseDedup, requeueNext = requeueNext}
  return coldHelpers
end

-- BullMQ's moveToFinished trims the events stream (XTRIM MAXLEN ~) before
-- it writes a finished job's events, which it adds untrimmed; its retryJob,
-- moveToDelayed and moveJobFromActiveToWait add their one event with
-- MAXLEN ~. Only the last trim decides what the stream keeps (a trim with
-- more entries removes every node an earlier one would), so the batch
-- trims once, where BullMQ's calls for its jobs trim last: before the last
-- job's events when it is finished for good, else with its one event.
-- trimmed: the event being written is added untrimmed.
local trimmed = false
local function addEvent(...)
  if trimmed then
    return rcall("XADD", eventsKey, "*", ...)
  end
  return rcall("XADD", eventsKey, "MAXLEN", "~", maxLen, "*", ...)
end

-- specsOf: each finished set's keep specs, in the order its jobs were
-- added; stepwise: the sets whose jobs are added and trimmed one at a
-- time, as BullMQ's calls do: their specs differ (a job's trim must not
-- reach a job finished after it, which may keep more: campaign seed 30),
-- or one has an age bound with a limit (each call trims up to the limit).
-- Otherwise one trim after the batch is what a trim per job leaves.
local specsOf = {}
local stepwise = {}
local function noteTrim(setKey, spec)
  local sp = specsOf[setKey]
  if not sp then
    sp = {}
    specsOf[setKey] = sp
  end
  sp[#sp + 1] = spec
  if spec ~= sp[1] or string.find(spec, "^%-?%d+,%-?%d+,[1-9]") then
    stepwise[setKey] = true
  end
  if spec ~= "" and spec ~= "0" then
    trims[setKey .. "\n" .. spec] = {setKey, spec}
  end
end

if single then
  codes = {}
  for i = 1, n do
    codes[i] = 0
  end
  lastFinal = true
  completedN = n
  if singleTrim then
    local o = 12
    cold().trimFinished(completedKey, singleTrim, now)
    -- The stream was trimmed (XTRIM) before the job's event.
    rcall("XADD", eventsKey, "*", "event", "completed", "jobId", ARGV[o + REC.id], "returnvalue", ARGV[o + REC.value], "prev", "active")
  elseif straightTrims then
    for _, t in pairs(straightTrims[1]) do
      cold().trimFinished(t[1], t[2], now)
    end
    -- The stream was trimmed (XTRIM) before the last job's event.
    rcall("XADD", eventsKey, "*", "event", "completed", "jobId", straightTrims[2], "returnvalue", straightTrims[3], "prev", "active")
  end
else
  codes = {}
  -- Pass 1: which jobs does this worker still own? One MGET reads every
  -- lock. A lock held with the job's token proves the job exists: every path
  -- that deletes a job refuses locked jobs or deletes the lock with it.
  -- Where each record starts: a record is REC_HEAD fields, or REC_FIELDS
  -- when its "more" field says its tail follows (see finishRecord). Job keys
  -- are built once here (a concatenation makes a new string each time).
  -- Loops below are numeric: ipairs costs a function call per item.
  local at = {}
  local jobIds = {}
  local jobKeys = {}
  local lockKeys = {}
  do
    local o = 12
    for i = 0, n - 1 do
      at[i] = o
      local id = ARGV[o + REC.id]
      jobIds[i + 1] = id
      local jobKey = base .. id
      jobKeys[i + 1] = jobKey
      lockKeys[i + 1] = jobKey .. ":lock"
      o = o + (ARGV[o + REC.more] == "1" and REC_FIELDS or REC_HEAD)
    end
  end
  -- The same MGET reads the call's settled mark (include/settled.lua), last:
  -- a call settleCall settled (its reply was lost) writes nothing. Nothing
  -- above writes. (A separate EXISTS would cost a script call's worth more.)
  lockKeys[n + 1] = base .. "call:" .. ARGV[4]
  local locks = rcall("MGET", unpack(lockKeys))
  lockKeys[n + 1] = nil
  if locks[n + 1] then
    return redis.error_reply("SETTLED this call was settled after its reply was lost; it did nothing")
  end
  -- A call that fetches nothing (a manual finish, a closing or paused
  -- worker's) promotes no due delayed job, as BullMQ's moveToFinished
  -- without fetchNext, moveToDelayed and moveJobFromActiveToWait do; but a
  -- retry now does, first (BullMQ's retryJob promotes before it looks at the
  -- job, so its job is queued after the promoted ones).
  if fetchCount <= 0 then
    for i = 0, n - 1 do
      if ARGV[at[i] + REC.kind] == "r" then
        promoteDelayed(meta[2] ~= false or (meta[3] ~= false and rcall("LLEN", activeKey) >= tonumber(meta[3])))
        break
      end
    end
  end
  local owned = {}
  local mine = {}
  for i = 0, n - 1 do
    local o = at[i]
    local lock = locks[i + 1]
    if lock ~= ARGV[o + REC.token] then
      local jobKey = jobKeys[i + 1]
      if lock then
        codes[i + 1] = -6
      elseif rcall("EXISTS", jobKey) == 0 then
        codes[i + 1] = -1
      else
        codes[i + 1] = -2
      end
      if codes[i + 1] ~= -1 and ARGV[o + REC.kind] == "c" then
        -- BullMQ's moveToFinished looks at a completion's children before
        -- its lock: a pending or failed child is the refusal it reports.
        if rcall("SCARD", jobKey .. ":dependencies") > 0 then
          codes[i + 1] = -4
          refused = refused + 1
        elseif rcall("ZCARD", jobKey .. ":unsuccessful") > 0 then
          codes[i + 1] = -9
          refused = refused + 1
        end
      end
    else
      codes[i + 1] = -3 -- until found in active
      mine[#mine + 1] = i
    end
  end

  -- A job may become a flow parent while it runs (a child added with the
  -- parent option). It cannot complete while a child is pending (-4) or one
  -- failed with failParentOnFailure (-9); BullMQ refuses the same way. One
  -- EXISTS over the batch keeps this off the common path.
  local probe = {}
  for k = 1, #mine do
    local i = mine[k]
    if ARGV[at[i] + REC.kind] == "c" then
      local jobKey = jobKeys[i + 1]
      probe[#probe + 1] = jobKey .. ":dependencies"
      probe[#probe + 1] = jobKey .. ":unsuccessful"
    end
  end
  -- noDeps: no completion of the batch has either key, so a removal below
  -- need not look them up again (on a queue of millions of keys each lookup
  -- of a missing key costs about 0.8 us).
  local noDeps = false
  if #probe > 0 and rcall("EXISTS", unpack(probe)) == 0 then
    noDeps = true
  elseif #probe > 0 then
    local free = {}
    for k = 1, #mine do
      local i = mine[k]
      local jobKey = jobKeys[i + 1]
      if ARGV[at[i] + REC.kind] ~= "c" then
        free[#free + 1] = i
      elseif rcall("SCARD", jobKey .. ":dependencies") > 0 then
        codes[i + 1] = -4
        refused = refused + 1
      elseif rcall("ZCARD", jobKey .. ":unsuccessful") > 0 then
        codes[i + 1] = -9
        refused = refused + 1
      else
        free[#free + 1] = i
      end
    end
    mine = free
  end
  -- The call stops at its first refused completion: the records after it
  -- are left untouched (-16, the job still active and locked) for the
  -- caller to send again after the refused job's failure, as BullMQ's
  -- worker fails that job before it finishes the ones after it.
  if refused > 0 then
    local cut = n
    for i = 0, n - 1 do
      local c = codes[i + 1]
      if c == -4 or c == -9 then
        cut = i
        break
      end
    end
    for i = cut + 1, n - 1 do
      codes[i + 1] = -16
    end
    local kept = {}
    for k = 1, #mine do
      if mine[k] < cut then
        kept[#kept + 1] = mine[k]
      end
    end
    mine = kept
  end

  -- Take the owned jobs out of active. One LREM per job scans the list each
  -- time; for a big batch it is cheaper to read the list once and write back
  -- what stays (same order, so BullMQ's readers see no difference).
  local activeLen = not removedHere and #mine >= 8 and rcall("LLEN", activeKey) or 0
  if removedHere then
    -- The straight path took them out already (see removedHere).
    for k = 1, #mine do
      local i = mine[k]
      if removedHere[i + 1] then
        codes[i + 1] = 0
      end
    end
  elseif #mine >= 8 and activeLen <= 16 * #mine then
    local leaving = {}
    for k = 1, #mine do
      local i = mine[k]
      leaving[jobIds[i + 1]] = i
    end
    local stay = {}
    local list = rcall("LRANGE", activeKey, "0", "-1")
    for k = 1, #list do
      local id = list[k]
      local i = leaving[id]
      if i and codes[i + 1] == -3 then
        codes[i + 1] = 0
      else
        stay[#stay + 1] = id
      end
    end
    rcall("DEL", activeKey)
    for from = 1, #stay, 5000 do
      rcall("RPUSH", activeKey, unpack(stay, from, math.min(from + 4999, #stay)))
    end
  else
    for k = 1, #mine do
      local i = mine[k]
      if rcall("LREM", activeKey, "-1", jobIds[i + 1]) > 0 then
        codes[i + 1] = 0
      end
    end
  end
  for k = 1, #mine do
    local i = mine[k]
    if codes[i + 1] == 0 then
      owned[#owned + 1] = i
    else
      -- -3: the lock is this call's but the job is not active. BullMQ's
      -- moveToFinished (retryJob, moveToDelayed) removes the lock, and
      -- writes a failure's reason and stack trace, before it looks at
      -- active.
      rcall("DEL", lockKeys[i + 1])
      rcall("SREM", stalledKey, jobIds[i + 1])
      local o = at[i]
      local kind = ARGV[o + REC.kind]
      if kind == "f" or kind == "r" or kind == "d" then
        local stack = ARGV[o + REC.more] == "1" and ARGV[o + REC.stacktrace] or ""
        if stack ~= "" then
          rcall("HSET", jobKeys[i + 1], "failedReason", ARGV[o + REC.value], "stacktrace", stack)
        else
          rcall("HSET", jobKeys[i + 1], "failedReason", ARGV[o + REC.value])
        end
      end
    end
  end
  if n > 0 and #owned == n then
    -- The usual case: every job of the batch was this worker's.
    rcall("DEL", unpack(lockKeys))
    rcall("SREM", stalledKey, unpack(jobIds))
  elseif #owned > 0 then
    local dels, ids = {}, {}
    for k = 1, #owned do
      local i = owned[k]
      dels[k] = lockKeys[i + 1]
      ids[k] = jobIds[i + 1]
    end
    rcall("DEL", unpack(dels))
    rcall("SREM", stalledKey, unpack(ids))
  end
  if #owned > 0 and not meta[1] then
    rcall("HSET", metaKey, "opts.maxLenEvents", maxLen)
  end

  -- Pass 2: move each owned job to its next state, writing its events as it
  -- goes, so the stream reads as BullMQ's one moveToFinished call per job
  -- writes it: a flow child's parent release, then the child's own event,
  -- job after job. Finished jobs are added to their set with one ZADD per set
  -- and the sets are trimmed once, both when the pass reaches the batch's
  -- last finished job (lastFinalK), before that job's own event: BullMQ
  -- trims before it writes a finished job's event (a trimmed flow child's
  -- parent release comes first), and no finished job follows it.
  local finished = {[completedKey] = {}, [failedKey] = {}}
  local finals = {}
  local lastFinalK
  for k = #owned, 1, -1 do
    local kind = ARGV[at[owned[k]] + REC.kind]
    if kind == "c" or kind == "f" then
      lastFinalK = k
      break
    end
  end
  lastFinal = lastFinalK ~= nil and lastFinalK == #owned

  for k = 1, #owned do
    local i = owned[k]
    local o = at[i]
    local id = jobIds[i + 1]
    local kind = ARGV[o + REC.kind]
    local value = ARGV[o + REC.value]
    local jobKey = jobKeys[i + 1]
    -- Without a tail (a plain completion) its fields read as "". "p": no
    -- tail, but a flow may have adopted the job while it ran (a custom id):
    -- then it goes the general way, to its new parent.
    trimmed = k < #owned or kind == "c" or kind == "f"
    if k == #owned and trimmed then
      rcall("XTRIM", eventsKey, "MAXLEN", "~", maxLen)
    end
    local moreFlag = ARGV[o + REC.more]
    local more = moreFlag == "1"
    local adopted = moreFlag == "p" and rcall("HEXISTS", jobKey, "parentKey") == 1
    local atm = ARGV[o + REC.attemptsMade]
    local final = false
    if not more and kind == "c" and not adopted then
      -- A plain completion: no timeline, deduplication id or parent, so the
      -- fields go straight to HSET (the general path below builds a table).
      local spec = ARGV[o + REC.keep]
      if spec == "0" and noDeps then
        rcall("DEL", jobKey, jobKey .. ":logs", jobKey .. ":processed", jobKey .. ":failed")
      elseif spec == "0" then
        removeJobKeys(jobKey)
      else
        rcall("HSET", jobKey, "atm", atm, "returnvalue", value, "finishedOn", ARGV[2])
        local add = finished[completedKey]
        add[#add + 1] = ARGV[2]
        add[#add + 1] = id
        noteTrim(completedKey, spec)
      end
      final = true
    else
      local stack = more and ARGV[o + REC.stacktrace] or ""
      local timeline = more and ARGV[o + REC.timeline] or ""
      local fields = {}
      if kind ~= "c" and kind ~= "w" and kind ~= "m" then
        fields[#fields + 1] = "failedReason"
        fields[#fields + 1] = value
        if stack ~= "" then
          fields[#fields + 1] = "stacktrace"
          fields[#fields + 1] = stack
        end
        local tm = more and ARGV[o + REC.tm] or ""
        if tm ~= "" then
          fields[#fields + 1] = "tm"
          fields[#fields + 1] = tm
        end
      end
      if kind ~= "w" and kind ~= "m" then
        fields[#fields + 1] = "atm"
        fields[#fields + 1] = atm
      end
      if timeline ~= "" then
        fields[#fields + 1] = "drover.attempts"
        fields[#fields + 1] = timeline
      end

      if kind == "c" or kind == "f" then
        local deid = more and ARGV[o + REC.dedupId] or ""
        if deid ~= "" then
          cold().releaseDedup(id, deid)
          cold().requeueNext(deid, ARGV[2])
        end
        local parent = nil
        if adopted or (more and ARGV[o + REC.hasParent] == "1") then
          local flow = cold()
          parent = flow.parentOf(jobKey)
          if parent then
            if kind == "c" then
              flow.childCompleted(parent, jobKey, value, now)
            else
              flow.childFailed(parent, jobKey, value, now)
            end
          end
        end
        local spec = ARGV[o + REC.keep]
        local setKey = kind == "c" and completedKey or failedKey
        if spec == "0" then
          removeJobKeys(jobKey)
          if parent then
            -- A child failed without a failure policy still counts as pending.
            cold().detachFromParent(jobKey, parent.key, false)
          end
        else
          fields[#fields + 1] = kind == "c" and "returnvalue" or "failedReason"
          fields[#fields + 1] = value
          fields[#fields + 1] = "finishedOn"
          fields[#fields + 1] = ARGV[2]
          rcall("HSET", jobKey, unpack(fields))
          if kind == "f" then
            rcall("HDEL", jobKey, "defa")
          end
          local add = finished[setKey]
          add[#add + 1] = ARGV[2]
          add[#add + 1] = id
          noteTrim(setKey, spec)
        end
        final = true
      elseif kind == "r" or kind == "w" then
        requeued = requeued or kind == "w"
        if #fields > 0 then
          rcall("HSET", jobKey, unpack(fields))
        end
        -- Read the priority now: changePriority may have changed it meanwhile.
        local priority = jobPriority(rcall("HGET", jobKey, "priority"))
        local blocked = pausedOrMaxed(metaKey, activeKey)
        if kind == "r" then
          pushReady(waitKey, prioritizedKey, pcKey, id, priority, ARGV[o + REC.lifo] == "1")
          addBaseMarker(markerKey, blocked)
        elseif priority > 0 then
          -- Back to the front of its priority band, as BullMQ's move-back does.
          rcall("ZADD", prioritizedKey, priorityScoreOf(priority, 0), id)
          -- A closing worker's job (value "shutdown") wakes a worker, as its
          -- stalled recovery would; BullMQ's move-back writes no marker here.
          if value == "shutdown" then
            addBaseMarker(markerKey, blocked)
          end
        else
          rcall("RPUSH", waitKey, id)
          addBaseMarker(markerKey, blocked)
        end
        addEvent("event", "waiting", "jobId", id, "prev", "active")
      else -- "d" or "m"
        local due = ARGV[o + REC.due]
        fields[#fields + 1] = "delay"
        fields[#fields + 1] = ARGV[o + REC.delay]
        rcall("HSET", jobKey, unpack(fields))
        rcall("ZADD", delayedKey, delayedScore(delayedKey, due), id)
        addEvent("event", "delayed", "jobId", id, "delay", due)
        delayed = true
      end
    end
    if final then
      finals[#finals + 1] = i
      if k == lastFinalK then
        for setKey, add in pairs(finished) do
          if stepwise[setKey] then
            local sp = specsOf[setKey]
            for j = 1, #sp do
              rcall("ZADD", setKey, add[2 * j - 1], add[2 * j])
              if sp[j] ~= "" then
                cold().trimFinished(setKey, sp[j], now)
              end
            end
          elseif #add > 0 then
            rcall("ZADD", setKey, unpack(add))
          end
        end
        for _, t in pairs(trims) do
          if not stepwise[t[1]] then
            cold().trimFinished(t[1], t[2], now)
          end
        end
      end
      if kind == "c" then
        addEvent("event", "completed", "jobId", id, "returnvalue", value, "prev", "active")
      else
        addEvent("event", "failed", "jobId", id, "failedReason", value, "prev", "active")
        if tonumber(atm) >= tonumber(ARGV[o + REC.attempts]) then
          rcall("XADD", eventsKey, "*", "event", "retries-exhausted", "jobId", id, "attemptsMade", atm)
        end
      end
    end
  end
  anyOwned = #owned > 0
  for k = 1, #finals do
    if ARGV[at[finals[k]] + REC.kind] == "c" then
      completedN = completedN + 1
    else
      failedN = failedN + 1
    end
  end
end

-- BullMQ's worker metrics count a job finished for good in the step that
-- finishes it, so a count is never lost to a worker that dies after the finish.
local metricsPoints = tonumber(ARGV[11])
if metricsPoints > 0 then
  countMetrics("completed", completedN, ARGV[2], metricsPoints)
  countMetrics("failed", failedN, ARGV[2], metricsPoints)
end

local exactLock = ARGV[12]
if exactLock ~= "" and codes[1] ~= 0 then
  fetchCount = 0
end
if refused > 0 then
  fetchCount = 0
end
if not fetched then
  fetched = fetchJobs(now, fetchCount, exactLock ~= "" and exactLock or ARGV[4], ARGV[5], ARGV[6],
    tonumber(ARGV[7]), tonumber(ARGV[8]), {meta[2], meta[3], meta[4], meta[5]}, exactLock ~= "", fetchCount <= 0,
    popped or (waitTried and "tried") or anyOwned)
end
if #fetched[2] == 0 then
  if delayed then
    addDelayMarker(markerKey, delayedKey)
  end
  -- Without a fetch, a paused or maxed queue (fetched[3]) is drained too,
  -- as after BullMQ's moveToFinished without fetchNext.
  if lastFinal and not fetched[1] and (fetchCount <= 0 or not fetched[3]) and fetched[4] == 0
      and rcall("LLEN", waitKey) == 0 and rcall("LLEN", activeKey) == 0
      and rcall("ZCARD", prioritizedKey) == 0 then
    rcall("XADD", eventsKey, "*", "event", "drained")
  end
end
local ttl = fetched[4]
if requeued and ttl == 0 then
  ttl = math.max(rcall("PTTL", limiterKey), 0)
end
-- Every job done (the usual case): the count stands for n zeros, which
-- Redis would otherwise turn into a reply item each.
for i = 1, n do
  if codes[i] ~= 0 then
    return {codes, fetched[1], fetched[2], ttl}
  end
end
return {n, fetched[1], fetched[2], ttl}
