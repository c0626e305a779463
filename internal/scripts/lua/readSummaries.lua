-- readSummaries: the fields of some jobs that a list shows, without what it
-- does not show. A failed reason, a stack trace or an attempt's error can be
-- megabytes (a response body, a dump), and a failed job holds the message
-- in each: HMGET sent all of it, 2.6 MB a job for a 512 KB message that
-- failed twice, seconds for a page. Here a failed reason longer than the
-- cut comes cut, and the stack traces and the attempt timeline, which a
-- list reads only to tell why a job failed for good, come as their last
-- entry alone, cut too: each value keeps its stored format (a JSON array
-- of one trace, of one attempt), so the caller decodes it as it decodes a
-- whole one. It writes nothing.
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 the failed reason's cut in bytes, 3 the last trace's and
--   last attempt's cut, 4 flags ("w": the failed reason whole, "d": read
--   the delayed-set score), 5 the number of fields n, 6..5+n the fields
--   (failedReason, stacktrace and drover.attempts are shortened when
--   named), then the job ids.
-- Returns one entry per id: the n values (nil when absent), the failed
--   reason's stored length in bytes (0 when absent), and the delayed-set
--   score (nil when not read or not delayed).
--@include common
--@include queue

local cut = tonumber(ARGV[2])
local traceCut = tonumber(ARGV[3])
local wholeReason = string.find(ARGV[4], "w", 1, true) ~= nil
local readScore = string.find(ARGV[4], "d", 1, true) ~= nil
local nf = tonumber(ARGV[5])
local fields = {}
local reasonAt, stackAt, timelineAt
for i = 1, nf do
  local f = ARGV[5 + i]
  fields[i] = f
  if f == "failedReason" then
    reasonAt = i
  elseif f == "stacktrace" then
    stackAt = i
  elseif f == "drover.attempts" then
    timelineAt = i
  end
end

-- utf8Cut is n, moved back to the end of a whole UTF-8 sequence of s.
local function utf8Cut(s, n)
  local b = string.byte(s, n + 1)
  while n > 0 and b and b >= 128 and b < 192 do
    n = n - 1
    b = string.byte(s, n + 1)
  end
  return n
end

-- cutJSONText cuts s, the inside of a JSON string as stored, to at most n
-- bytes, never inside an escape or a UTF-8 sequence.
local function cutJSONText(s, n)
  if #s <= n then
    return s
  end
  s = string.sub(s, 1, utf8Cut(s, n))
  -- The last backslash of the last 6 bytes: an escape ("\n", "\u00e9")
  -- is at most 6 bytes. An odd run of backslashes ending there starts an
  -- escape; it is whole when its letter, and for \u its 4 digits, made it.
  for i = #s, math.max(1, #s - 5), -1 do
    if string.byte(s, i) == 92 then
      local run = 1
      while i - run >= 1 and string.byte(s, i - run) == 92 do
        run = run + 1
      end
      if run % 2 == 1 and (i == #s or (string.byte(s, i + 1) == 117 and #s - i < 5)) then
        s = string.sub(s, 1, i - 1)
      end
      break
    end
  end
  return s
end

-- lastFind is the start of the last plain occurrence of pat in s that ends
-- at byte hi or before, or nil. It reads s back from hi a chunk at a time,
-- so it costs the distance of that occurrence from hi, not the length of s.
local function lastFind(s, pat, hi)
  local chunk = 65536
  while hi >= #pat do
    local lo = math.max(1, hi - chunk + 1)
    local part = string.sub(s, lo, hi)
    local at, from = nil, 1
    while true do
      local p = string.find(part, pat, from, true)
      if not p then
        break
      end
      at, from = p, p + 1
    end
    if at then
      return lo + at - 1
    end
    if lo == 1 then
      return nil
    end
    -- Overlap by #pat - 1 bytes: an occurrence across the edge is found.
    hi = lo + #pat - 2
  end
  return nil
end

-- lastTrace is a stored stack trace list (a JSON array of strings, written
-- without spaces by BullMQ and by drover) cut to its last trace, that one
-- cut to n bytes. Inside a JSON string every quote is escaped, so the last
-- '","' before the list's closing quote is the separator before the last
-- trace (its first quote may be an escaped one that ends a trace's text). A list of another shape comes whole while it is short,
-- else as no trace.
local function lastTrace(st, n)
  if #st <= n then
    return st
  end
  if string.sub(st, 1, 2) ~= '["' or string.sub(st, -2) ~= '"]' then
    return "[]"
  end
  local from = 3
  local sep = lastFind(st, '","', #st - 2)
  if sep then
    from = sep + 3
  end
  return '["' .. cutJSONText(string.sub(st, from, #st - 2), n) .. '"]'
end

-- lastAttempt is a stored attempt timeline (a JSON array of objects, each
-- starting {"v": or, before version 2, {"n":) cut to its last attempt. An
-- attempt longer than n bytes (its error is) comes without its error and
-- what follows it but "unrecoverable" (version 1's mark of an
-- unrecoverable failure): its number and outcome come before its error. A
-- quote inside a JSON string is escaped, so '{"v":' and '{"n":' occur only
-- where an attempt starts. A timeline of another shape comes whole while it
-- is short, else as none.
local function lastAttempt(tl, n)
  if #tl <= n then
    return tl
  end
  local from = math.max(lastFind(tl, '{"v":', #tl) or 0, lastFind(tl, '{"n":', #tl) or 0)
  if from == 0 or string.sub(tl, -2) ~= "}]" then
    return "[]"
  end
  local rec = string.sub(tl, from, #tl - 1)
  if #rec > n then
    local e = string.find(rec, ',"error":', 1, true)
    if not e then
      return "[]"
    end
    local tail = "}"
    if string.find(rec, '"unrecoverable":true', e, true) then
      tail = ',"unrecoverable":true}'
    end
    rec = string.sub(rec, 1, e - 1) .. tail
  end
  return "[" .. rec .. "]"
end

local out = {}
for i = 6 + nf, #ARGV do
  local id = ARGV[i]
  local vals = rcall("HMGET", base .. id, unpack(fields))
  local reasonLen = 0
  if reasonAt and vals[reasonAt] then
    local r = vals[reasonAt]
    reasonLen = #r
    if not wholeReason and #r > cut then
      vals[reasonAt] = string.sub(r, 1, utf8Cut(r, cut))
    end
  end
  if stackAt and vals[stackAt] then
    vals[stackAt] = lastTrace(vals[stackAt], traceCut)
  end
  if timelineAt and vals[timelineAt] then
    vals[timelineAt] = lastAttempt(vals[timelineAt], traceCut)
  end
  local score = false
  if readScore then
    score = rcall("ZSCORE", delayedKey, id)
  end
  out[#out + 1] = {vals, reasonLen, score}
end
return out
