-- queue.lua: names for the queue keys every drover script receives, in the
-- order internal/keys.Queue.ScriptKeys builds them. ARGV[1] is always the
-- "<prefix>:<queue>:" base that job keys are built from; it carries the same
-- hash tag as KEYS, so job keys live in the queue's cluster slot.
local waitKey = KEYS[1]
local activeKey = KEYS[2]
local prioritizedKey = KEYS[3]
local delayedKey = KEYS[4]
local completedKey = KEYS[5]
local failedKey = KEYS[6]
local pausedKey = KEYS[7]
local waitingChildrenKey = KEYS[8]
local eventsKey = KEYS[9]
local metaKey = KEYS[10]
local markerKey = KEYS[11]
local pcKey = KEYS[12]
local idKey = KEYS[13]
local stalledKey = KEYS[14]
local stalledCheckKey = KEYS[15]
local limiterKey = KEYS[16]
local base = ARGV[1]
