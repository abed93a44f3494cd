-- Raises members' pushed, delivered or read cursors in the receipt sets of many
-- conversations in one call, each conversation's raise one atomic step (the
-- call is one). A cursor is the highest seq any of the member's devices
-- stored (delivered) or the member read, or the highest seq a node wrote
-- to a live connection of one of the member's devices (pushed: handed to
-- the socket, not yet acked). Cursors only rise, so replays and
-- reordered acks change nothing; a device evicted later does not lower what
-- was delivered. All keys of a call share a hash slot: on a standalone
-- server any conversations, on a Redis Cluster those of one slot (the
-- caller groups them).
--
-- The sets belong to one epoch (receipts_lib.lua, prepended): when a
-- conversation's epoch moved on (a rebuild), its old sets are dropped
-- first; a raise of another epoch than the conversation's is ignored.
--
-- A mark of a user who is not a member now raises nothing ({0, 0}) and
-- takes that user out of the sets: the sets hold current members only.
--
-- KEYS, 6 per conversation, in the order of the conversations of ARGV:
--   the conversation's meta (hash: epoch, ...)
--   delivered cursors (zset: member -> seq)
--   read cursors (zset: member -> seq)
--   the epoch the sets belong to (string: epoch, ':m' when members-only)
--   its members (hash: user -> join seq)
--   pushed cursors (zset: member -> seq)
-- ARGV[1] 'p' (pushed), 'd' (delivered) or 'r' (read; a read message was
--   delivered too)
-- ARGV[2..] per conversation: the epoch of its seqs, n, then n pairs:
--   member, seq
-- Returns per conversation a list of {raised?, previous seq}, one per pair
-- ({-1, 0} for a stale epoch).
--
-- Why it is written the way it is: an ack raises one cursor in each
-- conversation it names (20 for a user of 20 groups coming back), and a
-- script call costs Redis more than the four commands of a raise, so the
-- conversations of a call share one.
local which = ARGV[1]

local call, tonumber = redis.call, tonumber
local target_is_read = which == 'r'

-- raise_one raises the n pairs from ARGV[a] in the conversation whose keys
-- start at KEYS[kb]; it returns their results.
local function raise_one(kb, epoch, a, n)
  local meta, delivered, read, sets_epoch = KEYS[kb], KEYS[kb + 1], KEYS[kb + 2], KEYS[kb + 3]
  local members, pushed = KEYS[kb + 4], KEYS[kb + 5]
  local out = {}
  if call('HGET', meta, 'epoch') ~= epoch then
    for i = 1, n do out[i] = {-1, 0} end
    return out
  end
  rc_renew(delivered, read, sets_epoch, epoch, members, pushed)
  local target = delivered
  if target_is_read then target = read elseif which == 'p' then target = pushed end
  for i = 1, n do
    local at = a + 2 * (i - 1)
    local member, seq = ARGV[at], tonumber(ARGV[at + 1])
    local rose, prev = false, 0
    local current = rc_member(delivered, read, members, member, pushed)
    if current then rose, prev = rc_raise(target, member, seq) end
    if not current then
      out[i] = {0, 0}
    elseif rose then
      if target_is_read then rc_raise(delivered, member, seq) end
      out[i] = {1, prev}
    else
      out[i] = {0, prev}
    end
  end
  return out
end

local out = {}
local a = 2
for kb = 1, #KEYS, 6 do
  local epoch, n = ARGV[a], tonumber(ARGV[a + 1])
  out[#out + 1] = raise_one(kb, epoch, a + 2, n)
  a = a + 2 + 2 * n
end
return out
