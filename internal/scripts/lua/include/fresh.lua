-- fresh.lua: the boundary a retry with fresh attempts leaves in the job's
-- drover attempt timeline (hash field "drover.attempts", read by timeline.go
-- as a record with "fresh"). Called before the counters are reset, it keeps
-- what they were, so the attempts before the reset stay listed and
-- numbered as they ran, and the ones after start again from 1.

-- freshBoundary appends the boundary to jobKey's timeline when resetMade or
-- resetStarted is "1": from is the state the job is retried from, nowMs the
-- time (text of digits, from Go). The stored array is Go's compact JSON: the
-- record is spliced in before its closing bracket, never re-encoded (cjson
-- would print the nanosecond backoffs of the other records as floats). A
-- field that is not an array (damaged: it decodes to nothing) is replaced.
local function freshBoundary(jobKey, from, resetMade, resetStarted, nowMs)
  if resetMade ~= "1" and resetStarted ~= "1" then
    return
  end
  local f = rcall("HMGET", jobKey, "atm", "ats", "stc", "stacktrace", "drover.attempts")
  local traces = 0
  if f[4] then
    local ok, st = pcall(cjson.decode, f[4])
    if ok and type(st) == "table" then
      traces = #st
    end
  end
  local started = tostring(math.floor(tonumber(f[2]) or 0))
  local rec = '{"v":2,"n":' .. started .. ',"outcome":"=","fresh":{"at":' .. nowMs .. ',"from":"' .. from ..
    '","made":' .. tostring(math.floor(tonumber(f[1]) or 0)) .. ',"started":' .. started ..
    ',"stalled":' .. tostring(math.floor(tonumber(f[3]) or 0)) .. ',"traces":' .. traces
  if resetMade == "1" then
    rec = rec .. ',"resetMade":true'
  end
  if resetStarted == "1" then
    rec = rec .. ',"resetStarted":true'
  end
  rec = rec .. '}}'
  local tl = f[5]
  if tl and string.sub(tl, 1, 1) == "[" and string.sub(tl, -1) == "]" and tl ~= "[]" then
    tl = string.sub(tl, 1, -2) .. "," .. rec .. "]"
  else
    tl = "[" .. rec .. "]"
  end
  rcall("HSET", jobKey, "drover.attempts", tl)
end
