-- Raises one user's delivered cursors for an ack, but only when every
-- conversation the ack names admits it: the user is a member now, the
-- epoch the device names (if any) is the conversation's, and no seq is
-- beyond its max. Otherwise it refuses, changing nothing, and the caller
-- checks the ack in full (which names the item at fault, and reads a
-- former member's spans). The checks and the raises are one atomic step
-- for all the conversations of the call, so a refused ack raised nothing;
-- all its keys share a hash slot (the caller uses it only when an ack's
-- conversations fit one call). A large group keeps no cursors: it is
-- checked and not raised. The raises are those of receipts_raise.lua (receipts_lib.lua, prepended).
--
-- KEYS, 6 per conversation, in the order of the conversations of ARGV:
--   the conversation's meta (hash: seq, epoch, large, ...)
--   its members (hash: user -> join seq)
--   delivered cursors (zset: member -> seq)
--   read cursors (zset: member -> seq)
--   the epoch the sets belong to (string)
--   pushed cursors (zset: member -> seq; renewed with the others)
-- ARGV[1] the user
-- ARGV[2..] per conversation: n, then n pairs: seq, the epoch the device
--   named ('0': none)
-- Returns {STATUS_REFUSED} or {STATUS_RAISED, per conversation {epoch,
-- large (0|1), a list of {raised?, previous seq}, one per pair (empty for
-- a large group)}}.
--
-- Why it is written the way it is: the API checked an ack with a command
-- per conversation and field in a round trip of its own, before the ack's
-- raise ran a script on the same slot anyway; a reconnecting user acks
-- every conversation they synced.
local user = ARGV[1]

local STATUS_REFUSED, STATUS_RAISED = 0, 1
-- MAX_EXACT_DIGITS: a seq of more digits may not compare exactly as a
-- Lua number; such an ack is left to the caller's full check.
local MAX_EXACT_DIGITS = 15

local call, tonumber = redis.call, tonumber

-- Every conversation is checked before anything is written.
local convs = {}
local a = 2
for kb = 1, #KEYS, 6 do
  local n = tonumber(ARGV[a])
  local meta = call('HMGET', KEYS[kb], 'epoch', 'seq', 'large')
  local epoch, max_seq = meta[1], tonumber(meta[2] or '0')
  if not epoch or not call('HGET', KEYS[kb + 1], user) then
    return {STATUS_REFUSED}
  end
  for i = 1, n do
    local at = a + 2 * i - 1
    local seq, named = ARGV[at], ARGV[at + 1]
    if #seq > MAX_EXACT_DIGITS or tonumber(seq) > max_seq or (named ~= '0' and named ~= epoch) then
      return {STATUS_REFUSED}
    end
  end
  convs[#convs + 1] = {kb = kb, a = a + 1, n = n, epoch = epoch, large = meta[3] == '1'}
  a = a + 1 + 2 * n
end

local out = {STATUS_RAISED}
for _, c in ipairs(convs) do
  local raised = {}
  if not c.large then
    local delivered, read, sets_epoch = KEYS[c.kb + 2], KEYS[c.kb + 3], KEYS[c.kb + 4]
    rc_renew(delivered, read, sets_epoch, c.epoch, KEYS[c.kb + 1], KEYS[c.kb + 5])
    for i = 1, c.n do
      local rose, prev = rc_raise(delivered, user, tonumber(ARGV[c.a + 2 * (i - 1)]))
      raised[i] = {rose and 1 or 0, prev}
    end
  end
  out[#out + 1] = {c.epoch, c.large and 1 or 0, raised}
end
return out
