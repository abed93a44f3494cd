-- Removes expired entries from the head of a conversation's timeline and
-- raises the retention floor `first` by as many, in one step.
--
-- The caller decided, from entries it read, how many head entries are past
-- their window. The plan is applied only if the timeline is still the one it
-- read (same epoch, same first), so a stale or repeated call removes nothing
-- more; and no entry written at or after ARGV[4] is ever removed.
--
-- KEYS[1] conversation meta (hash: epoch, first)
-- KEYS[2] conversation timeline (list of "SEQ:WRITE_MS:" .. body)
-- KEYS[3] the group's notice seqs (zset, score = seq): those popped go too
-- ARGV[1] epoch the caller read
-- ARGV[2] first the caller read
-- ARGV[3] number of head entries to remove
-- ARGV[4] write time in ms below which an entry may be removed
-- Returns the number of entries removed.
local epoch = redis.call('HGET', KEYS[1], 'epoch') or ''
local first = redis.call('HGET', KEYS[1], 'first') or ''
if epoch ~= ARGV[1] or first ~= ARGV[2] then
  return 0
end
local f = tonumber(first)
local want = tonumber(ARGV[3])
local cutoff = tonumber(ARGV[4])
local n = 0
while n < want do
  local head = redis.call('LINDEX', KEYS[2], 0)
  if not head then
    break
  end
  local seq, wt = string.match(head, '^(%d+):(%d+):')
  if not seq or tonumber(seq) ~= f + n or tonumber(wt) >= cutoff then
    break
  end
  redis.call('LPOP', KEYS[2])
  n = n + 1
end
if n > 0 then
  redis.call('HSET', KEYS[1], 'first', string.format('%d', f + n))
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', '(' .. string.format('%d', f + n))
end
return n
