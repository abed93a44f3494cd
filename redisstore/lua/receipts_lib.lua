-- receipts_lib.lua: the receipt sets of one conversation, shared by the
-- scripts that raise them. It is prepended to receipts_raise.lua and
-- receipts_ack.lua (see receipts.go) and does nothing on its own.
--
-- The sets belong to one epoch: seqs of two epochs name different
-- messages, so sets of another epoch than the conversation's are dropped
-- before a raise. A cursor only rises, so replays and reordered acks
-- change nothing.

-- rc_renew drops the delivered and read sets when the key sets_epoch says
-- they belong to another epoch than epoch, and makes them epoch's.
local function rc_renew(delivered, read, sets_epoch, epoch)
  if redis.call('GET', sets_epoch) ~= epoch then
    redis.call('DEL', delivered, read)
    redis.call('SET', sets_epoch, epoch)
  end
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

