-- score.lua: the scores of the delayed and prioritized sets, the Lua half of
-- internal/keys/score.go (same names, same arithmetic; TestScoresAgreeWithLua
-- holds them together). No other Lua computes a score.

-- DELAYED_SEQ_SPAN jobs due in the same millisecond keep their order.
local DELAYED_SEQ_SPAN = 4096
-- PRIORITY_BAND is the width of one priority's band.
local PRIORITY_BAND = 4294967296

-- delayedScoreOf is the score of the seq-th job due at due ms.
local function delayedScoreOf(due, seq)
  return due * DELAYED_SEQ_SPAN + seq
end

-- dueOfScore is the due time (ms) of a delayed-set score.
local function dueOfScore(score)
  return math.floor(tonumber(score) / DELAYED_SEQ_SPAN)
end

-- priorityScoreOf is the score of a job of priority taken with counter value c.
local function priorityScoreOf(priority, c)
  return priority * PRIORITY_BAND + (c % PRIORITY_BAND)
end
