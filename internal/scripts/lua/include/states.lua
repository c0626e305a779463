-- states.lua: the keys of the job states by their BullMQ names, the states
-- kept in lists and those kept in sorted sets (getCounts, getRanges,
-- cleanJobsInSet). Expects queue.lua in scope.
local stateLists = {waiting = waitKey, paused = pausedKey, active = activeKey}
local stateSets = {delayed = delayedKey, prioritized = prioritizedKey, completed = completedKey,
  failed = failedKey, ["waiting-children"] = waitingChildrenKey}
