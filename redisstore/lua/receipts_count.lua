-- Counts, for one seq of a conversation, the members it was delivered to
-- and read by (cursors at or above it), the sender's own cursor left out,
-- and the members other than the sender. O(log M): two ZCOUNTs.
--
-- KEYS[1] the conversation's meta (hash: epoch, seq, nmem, ...)
-- KEYS[2] delivered cursors (zset: member -> seq)
-- KEYS[3] read cursors (zset: member -> seq)
-- KEYS[4] the epoch the sets belong to (string)
-- KEYS[5] the conversation's members (hash)
-- ARGV[1] seq
-- ARGV[2] sender of that seq ('' when unknown)
-- Returns {epoch, max seq, delivered, read, others}.
local meta, delivered, read, sets_epoch = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local mem = KEYS[5]
local seq, sender = ARGV[1], ARGV[2]
local m = redis.call('HMGET', meta, 'epoch', 'seq')
local epoch = m[1] or '0'
local members = redis.call('HLEN', mem)
local others = members
if sender ~= '' and redis.call('HEXISTS', mem, sender) == 1 then
  others = others - 1
end
if redis.call('GET', sets_epoch) ~= epoch then
  return {epoch, m[2] or '0', 0, 0, others}
end
local d = redis.call('ZCOUNT', delivered, seq, '+inf')
local r = redis.call('ZCOUNT', read, seq, '+inf')
if sender ~= '' then
  local sd = tonumber(redis.call('ZSCORE', delivered, sender) or '0')
  if sd >= tonumber(seq) then d = d - 1 end
  local sr = tonumber(redis.call('ZSCORE', read, sender) or '0')
  if sr >= tonumber(seq) then r = r - 1 end
end
return {epoch, m[2] or '0', d, r, others}
