-- settled.lua: a worker call (moveToActive, finishJobs) whose reply was lost
-- is settled by settleCall, which marks its lock token base settled under
-- <base>call:<token>. A copy of the call that reaches Redis after that (it
-- was sent before the reply was lost and held up by a paused server or a
-- stalled network) must write nothing: nobody reads its reply, so jobs it
-- fetched would sit in active until the stalled checker. (':' cannot occur
-- in a job id, so the key is no job's.)
-- finishJobs reads the mark with its lock MGET instead (one command fewer).
-- Expects common.lua and queue.lua in scope.

-- callSettled is true when the call with lock token base token was settled.
local function callSettled(token)
  return rcall("EXISTS", base .. "call:" .. token) == 1
end
