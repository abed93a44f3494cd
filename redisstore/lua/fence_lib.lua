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
--
-- Cost: INFO server is the one way a script learns its instance (nothing
-- a script can read of the keyspace tells one process from another, since
-- a restarted one has the same data, and Redis keeps no Lua state a script
-- may write between calls), so it is paid once per call: about 3 µs of
-- server time. The run_id is then found with a plain search, not a
-- pattern: Lua's matcher tries the pattern at every byte of the ~600 the
-- section holds, which cost as much again as INFO itself. The guarantee is
-- the same: the run_id is the 40 hex digits after 'run_id:', and a script
-- goes on only when they are, between commas, among the verified ones.
local REFUSAL_FENCED = 'OBFENCED'
local function fence_refusal(verified)
  if verified == nil or verified == '' then return nil end
  local info = redis.call('INFO', 'server')
  local at = string.find(info, 'run_id:', 1, true)
  local id = at and string.sub(info, at + 7, at + 46)
  if id and #id == 40 and string.find(verified, ',' .. id .. ',', 1, true) then return nil end
  return redis.error_reply(REFUSAL_FENCED .. ' run_id ' .. tostring(id))
end
