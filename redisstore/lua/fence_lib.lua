-- fence_lib.lua: the instance fence, prepended to every script whose
-- effects a restore from im.sequenced must be able to rebuild.
--
-- A redis-server process has a run_id of its own, new on every start
-- (even from the same data) and on every replica promoted. The writer
-- passes, as the LAST argument, the run_ids it has verified: servers whose
-- state it compared with the changelog and restored. A script running on
-- any other instance changes nothing and fails with OBFENCED; the writer
-- restores that instance before it writes there again. An empty argument
-- means an unfenced caller (tools and tests that restore nothing).

-- fence_refusal returns the error reply to give when this instance is not
-- among the verified ones, or nil when the script may go on.
local REFUSAL_FENCED = 'OBFENCED'
local function fence_refusal(verified)
  if verified == nil or verified == '' then return nil end
  local id = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
  if id and string.find(verified, ',' .. id .. ',', 1, true) then return nil end
  return redis.error_reply(REFUSAL_FENCED .. ' run_id ' .. tostring(id))
end
