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
local meta, tl, notices = KEYS[1], KEYS[2], KEYS[3]
local epoch_read, first_read, want_arg, cutoff_arg = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local epoch = redis.call('HGET', meta, 'epoch') or ''
local first = redis.call('HGET', meta, 'first') or ''
if epoch ~= epoch_read or first ~= first_read then
  return 0
end
local f = tonumber(first)
local want = tonumber(want_arg)
local cutoff = tonumber(cutoff_arg)
local n = 0
while n < want do
  local head = redis.call('LINDEX', tl, 0)
  if not head then
    break
  end
  local seq, wt = string.match(head, '^(%d+):(%d+):')
  if not seq or tonumber(seq) ~= f + n or tonumber(wt) >= cutoff then
    break
  end
  redis.call('LPOP', tl)
  n = n + 1
end
if n > 0 then
  redis.call('HSET', meta, 'first', string.format('%d', f + n))
  redis.call('ZREMRANGEBYSCORE', notices, '-inf', '(' .. string.format('%d', f + n))
end
return n
