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
local seq, sender = ARGV[1], ARGV[2]
local m = redis.call('HMGET', KEYS[1], 'epoch', 'seq')
local epoch = m[1] or '0'
local members = redis.call('HLEN', KEYS[5])
local others = members
if sender ~= '' and redis.call('HEXISTS', KEYS[5], sender) == 1 then
  others = others - 1
end
if redis.call('GET', KEYS[4]) ~= epoch then
  return {epoch, m[2] or '0', 0, 0, others}
end
local d = redis.call('ZCOUNT', KEYS[2], seq, '+inf')
local r = redis.call('ZCOUNT', KEYS[3], seq, '+inf')
if sender ~= '' then
  local sd = tonumber(redis.call('ZSCORE', KEYS[2], sender) or '0')
  if sd >= tonumber(seq) then d = d - 1 end
  local sr = tonumber(redis.call('ZSCORE', KEYS[3], sender) or '0')
  if sr >= tonumber(seq) then r = r - 1 end
end
return {epoch, m[2] or '0', d, r, others}
