-- queuefirst.lua: the key base and the queue keys finishJobs' single job
-- uses (see queue.lua, which includes this file and names the others):
-- finishJobs builds these before its single job and the rest only after.
local base = ARGV[1]
local waitKey = KEYS[1]
local activeKey = KEYS[2] or base .. "active"
local delayedKey = KEYS[4] or base .. "delayed"
local completedKey = KEYS[5] or base .. "completed"
local eventsKey = KEYS[9] or base .. "events"
local metaKey = KEYS[10] or base .. "meta"
local stalledKey = KEYS[14] or base .. "stalled"
local limiterKey = KEYS[16] or base .. "limiter"
