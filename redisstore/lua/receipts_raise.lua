-- Raises one member's delivered or read cursor in a conversation's receipt
-- set: the highest seq any of the member's devices stored (delivered) or
-- the member read. Cursors only rise, so replays and reordered acks change
-- nothing; a device evicted later does not lower what was delivered.
--
-- The sets belong to one epoch: seqs of two epochs name different messages.
-- When the conversation's epoch moved on (a rebuild), the old sets are
-- dropped first; a raise of another epoch than the conversation's is
-- ignored.
--
-- KEYS[1] the conversation's meta (hash: epoch, ...)
-- KEYS[2] delivered cursors (zset: member -> seq)
-- KEYS[3] read cursors (zset: member -> seq)
-- KEYS[4] the epoch the sets belong to (string)
-- ARGV[1] epoch of the seqs
-- ARGV[2] 'd' (delivered) or 'r' (read; a read message was delivered too)
-- ARGV[3..] pairs: member, seq
-- Returns {raised?, previous seq} per pair ({-1, 0} for a stale epoch).
local meta, delivered, read, sets_epoch = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local which = ARGV[2]
local epoch = ARGV[1]
local cur = redis.call('HGET', meta, 'epoch')
local out = {}
if cur ~= epoch then
  for i = 3, #ARGV, 2 do
    out[#out + 1] = {-1, 0}
  end
  return out
end
if redis.call('GET', sets_epoch) ~= epoch then
  redis.call('DEL', delivered, read)
  redis.call('SET', sets_epoch, epoch)
end
local target = delivered
if which == 'r' then
  target = read
end
for i = 3, #ARGV, 2 do
  local member, seq = ARGV[i], tonumber(ARGV[i + 1])
  local prev = tonumber(redis.call('ZSCORE', target, member) or '0')
  if seq > prev then
    redis.call('ZADD', target, seq, member)
    if which == 'r' then
      local d = tonumber(redis.call('ZSCORE', delivered, member) or '0')
      if seq > d then
        redis.call('ZADD', delivered, seq, member)
      end
    end
    out[#out + 1] = {1, prev}
  else
    out[#out + 1] = {0, prev}
  end
end
return out
