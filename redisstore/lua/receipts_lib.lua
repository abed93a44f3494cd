-- receipts_lib.lua: the receipt sets of one conversation, shared by the
-- scripts that raise them. It is prepended to receipts_raise.lua and
-- receipts_ack.lua (see receipts.go) and does nothing on its own.
--
-- The sets belong to one epoch: seqs of two epochs name different
-- messages, so sets of another epoch than the conversation's are dropped
-- before a raise. A cursor only rises, so replays and reordered acks
-- change nothing. Only current members have cursors in the sets: a
-- former member's ack or read moves their own device and read cursors,
-- never the counts a sender is shown.

-- The sets hold current members only. sets_epoch holds the epoch
-- followed by ':m' once its sets were cleaned of members who left (sets
-- written before that rule hold the bare epoch, and may hold them).

-- rc_renew makes the pushed, delivered and read sets epoch's and members-only:
-- sets of another epoch are dropped; sets of this epoch in the old form
-- (sets_epoch the bare epoch) lose the entries of users not in the
-- members hash, once.
local function rc_renew(delivered, read, sets_epoch, epoch, members, pushed)
  local cur = redis.call('GET', sets_epoch)
  if cur == epoch .. ':m' then return end
  if cur == epoch then
    for _, set in ipairs({delivered, read, pushed}) do
      for _, m in ipairs(redis.call('ZRANGE', set, 0, -1)) do
        if redis.call('HEXISTS', members, m) == 0 then redis.call('ZREM', set, m) end
      end
    end
  else
    redis.call('DEL', delivered, read, pushed)
  end
  redis.call('SET', sets_epoch, epoch .. ':m')
end

-- rc_member says whether user is a member now; a former member's entries
-- are taken out of the sets (they may predate the members-only rule).
local function rc_member(delivered, read, members, user, pushed)
  if redis.call('HEXISTS', members, user) == 1 then return true end
  redis.call('ZREM', delivered, user)
  redis.call('ZREM', read, user)
  redis.call('ZREM', pushed, user)
  return false
end

-- rc_raise raises member's cursor in the set to seq (a number); it
-- returns whether it rose and the cursor before.
local function rc_raise(set, member, seq)
  local prev = tonumber(redis.call('ZSCORE', set, member) or '0')
  if seq > prev then
    redis.call('ZADD', set, seq, member)
    return true, prev
  end
  return false, prev
end

