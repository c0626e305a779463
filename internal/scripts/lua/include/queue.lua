-- queue.lua: names for the queue keys every drover script uses; KEYS[i]
-- is the key internal/keys.Queue.ScriptKeys lists i-th. ARGV[1] is always the
-- "<prefix>:<queue>:" base that job keys are built from; it carries the same
-- hash tag as the queue's keys, so job keys live in the queue's cluster slot.
-- On a Redis Cluster, KEYS holds all 16 (keys.Queue.ScriptArgs): the server
-- checks declared keys before it runs a script, so while a slot migrates a
-- call is redirected whole rather than failing part way. Elsewhere KEYS
-- holds the wait list alone (keys.Queue.Standalone) and the others are built
-- from the base: a declared key costs Redis about a thousand instructions
-- per call (an argument parsed, boxed and put in a Lua table), a
-- concatenation about half that, and the loader drops the lines of keys a
-- script never names (prune.go).
-- The base and the keys of queuefirst.lua come first.
--@include queuefirst
local prioritizedKey = KEYS[3] or base .. "prioritized"
local failedKey = KEYS[6] or base .. "failed"
local pausedKey = KEYS[7] or base .. "paused"
local waitingChildrenKey = KEYS[8] or base .. "waiting-children"
local markerKey = KEYS[11] or base .. "marker"
local pcKey = KEYS[12] or base .. "pc"
local idKey = KEYS[13] or base .. "id"
local stalledCheckKey = KEYS[15] or base .. "stalled-check"
