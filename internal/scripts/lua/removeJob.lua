-- removeJob: delete a job that no worker holds, with its children (each in
-- its own queue), detaching it from its parent (BullMQ's Job.remove with
-- removeChildren, its default); with ARGV[5] "1" the job alone, its
-- children left in place (removeChildren false).
-- KEYS: the 16 queue keys (include/queue.lua).
-- ARGV: 1 base, 2 job id, 3 the call token and 4 its ttl ms
--   (include/once.lua: go-redis resends the command when its reply is
--   lost, and a second run would refuse the job the first run moved),
--   5 "1" to keep the children.
-- Returns 1 removed; -12 the job or (unless kept) a child it waits for is
-- locked by a worker; -1 job missing; -8 the job is the pending iteration of a job
-- scheduler (codes: internal/scripts/errors.go).
--@include common
--@include queue
--@include remove
--@include once
--@include keytypes

local callKey, early = onceChecked(ARGV[3])
if early then
  return early
end

local id = ARGV[2]
local jobKey = base .. id
local wrongJob = wrongTypeJob(jobKey)
if wrongJob then
  return wrongJob
end
if isSchedulerIteration(id, jobKey) then
  return -8
end
local keepChildren = ARGV[5] == "1"
if keepChildren then
  if rcall("EXISTS", jobKey .. ":lock") == 1 then
    return -12
  end
elseif treeLocked(jobKey) then
  return -12
end
if rcall("EXISTS", jobKey) == 0 then
  -- Nothing to delete but a stray id in some state.
  if removeFromAnyState(base, id) == "unknown" then
    return -1
  end
  onceRemember(callKey, 1, ARGV[4])
  return 1
end
removeWithChildren(base, id, nil, keepChildren)
onceRemember(callKey, 1, ARGV[4])
return 1
