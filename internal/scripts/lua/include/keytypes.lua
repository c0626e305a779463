-- keytypes.lua: the admin scripts look at the types of the queue's own keys
-- before they move or delete a job. Redis does not undo a script's writes
-- when a later command fails, so a key of another type (a string another
-- program SET at "<queue>:wait", say) made Retry, Promote, RetryJobs,
-- Drain, ... take jobs out of their set and fail with WRONGTYPE on the
-- next, leaving them in no state. Only these scripts pay the TYPE calls:
-- add, fetch and finish do not include this file.
-- Expects common.lua and queue.lua in scope (and once.lua for onceChecked).

-- wrongTypeKeys is an error reply naming the first of want's {key, type}
-- pairs whose key holds another type, or nil.
local function wrongTypeKeys(want)
  for _, w in ipairs(want) do
    local t = rcall("TYPE", w[1])["ok"]
    if t ~= "none" and t ~= w[2] then
      return redis.error_reply("drover: queue key " .. w[1] .. " holds a " .. t .. ", not a " .. w[2] ..
        " (written by another program?): nothing was changed")
    end
  end
  return nil
end

-- wrongTypeJob is an error reply naming jobKey when it holds another type
-- than a hash, or nil. The scripts that act on one job by id check it
-- before their first write: Promote and Retry took the id out of its set
-- and then failed with WRONGTYPE on the hash, leaving the id in no state.
local function wrongTypeJob(jobKey)
  local t = rcall("TYPE", jobKey)["ok"]
  if t ~= "none" and t ~= "hash" then
    return redis.error_reply("drover: job key " .. jobKey .. " holds a " .. t .. ", not a hash" ..
      " (written by another program?): nothing was changed")
  end
  return nil
end

-- wrongTypeQueueKey is wrongTypeKeys for every queue key, with the type
-- BullMQ and drover keep there.
local function wrongTypeQueueKey()
  return wrongTypeKeys({
    {waitKey, "list"}, {activeKey, "list"}, {prioritizedKey, "zset"}, {delayedKey, "zset"},
    {completedKey, "zset"}, {failedKey, "zset"}, {pausedKey, "list"}, {waitingChildrenKey, "zset"},
    {eventsKey, "stream"}, {metaKey, "hash"}, {markerKey, "zset"}, {pcKey, "string"}, {idKey, "string"},
    {stalledKey, "set"}, {stalledCheckKey, "string"}, {limiterKey, "string"},
  })
end

-- onceChecked is how an admin script with a call token begins: the key its
-- reply is kept under (include/once.lua) and, to return at once, the reply
-- an earlier run of the same call stored, else the refusal of a queue key
-- of the wrong type, else nil.
local function onceChecked(token)
  local callKey, first = onceReply(base, token)
  if first then
    return callKey, first
  end
  return callKey, wrongTypeQueueKey()
end
