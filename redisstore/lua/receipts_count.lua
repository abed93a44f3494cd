-- Counts, for one seq of a conversation, the current members it was
-- pushed to (a live connection of theirs was written it), delivered to
-- and read by (cursors at or above it), the sender's own
-- cursor left out, and the members other than the sender. Members-only
-- sets (sets_epoch "epoch:m", see receipts_lib.lua) are counted with two
-- ZCOUNTs, O(log M); sets written before that rule (sets_epoch the bare
-- epoch) may still hold former members until a raise cleans them, so
-- their cursors at or above seq are counted only when in the members
-- hash, O(K).
--
-- KEYS[1] the conversation's meta (hash: epoch, seq, nmem, ...)
-- KEYS[2] delivered cursors (zset: member -> seq)
-- KEYS[3] read cursors (zset: member -> seq)
-- KEYS[4] the epoch the sets belong to (string)
-- KEYS[5] the conversation's members (hash)
-- KEYS[6] pushed cursors (zset: member -> seq)
-- ARGV[1] seq
-- ARGV[2] sender of that seq ('' when unknown)
-- Returns {epoch, max seq, delivered, read, others, pushed}.
local meta, delivered, read, sets_epoch = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local mem, pushed = KEYS[5], KEYS[6]
local seq, sender = ARGV[1], ARGV[2]
local m = redis.call('HMGET', meta, 'epoch', 'seq')
local epoch = m[1] or '0'
local members = redis.call('HLEN', mem)
local others = members
if sender ~= '' and redis.call('HEXISTS', mem, sender) == 1 then
  others = others - 1
end
local form = redis.call('GET', sets_epoch)
local function count(set)
  if form == epoch .. ':m' then
    return redis.call('ZCOUNT', set, seq, '+inf')
  end
  local n = 0
  for _, u in ipairs(redis.call('ZRANGEBYSCORE', set, seq, '+inf')) do
    if redis.call('HEXISTS', mem, u) == 1 then n = n + 1 end
  end
  return n
end
if form ~= epoch and form ~= epoch .. ':m' then
  return {epoch, m[2] or '0', 0, 0, others, 0}
end
local d, r, p = count(delivered), count(read), count(pushed)
if sender ~= '' and redis.call('HEXISTS', mem, sender) == 1 then
  local sd = tonumber(redis.call('ZSCORE', delivered, sender) or '0')
  if sd >= tonumber(seq) then d = d - 1 end
  local sr = tonumber(redis.call('ZSCORE', read, sender) or '0')
  if sr >= tonumber(seq) then r = r - 1 end
  local sp = tonumber(redis.call('ZSCORE', pushed, sender) or '0')
  if sp >= tonumber(seq) then p = p - 1 end
end
return {epoch, m[2] or '0', d, r, others, p}
