-- prologue.lua: the locals every drover script starts with (common.lua
-- includes it; a script may include it on its own first, to run code
-- before common.lua's helpers are made: see finishJobs' single job).

local rcall = redis.call
-- KEYS and ARGV as locals: reading a global is a table look-up each time,
-- and finishJobs reads ARGV a dozen times a job.
local KEYS, ARGV = KEYS, ARGV
