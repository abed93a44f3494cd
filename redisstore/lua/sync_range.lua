-- Reads a slice of a conversation's timeline for one member, together with
-- the conversation's counters, as one snapshot (the head of the timeline may
-- be popped by expiry at any moment; reading meta and entries separately
-- could pair a stale `first` with shifted indexes).
--
-- The slice is the seqs in (lo, hi) that the user may see: above the seq at
-- which they joined and inside the Redis window. Of those, at most `limit`
-- are returned: the newest ones when from_top is 1, the oldest otherwise.
-- With max_bytes > 0 the slice is cut further, from the far end, so that the
-- raw entries stay within max_bytes (at least one entry is always kept).
--
-- KEYS[1] conversation meta (hash)
-- KEYS[2] conversation timeline (list)
-- KEYS[3] conversation members (hash: user -> seq of joining)
-- ARGV[1] user id
-- ARGV[2] lo: exclusive lower seq bound
-- ARGV[3] hi: exclusive upper seq bound, 0 for none
-- ARGV[4] limit: most entries returned
-- ARGV[5] from_top: 1 for the newest entries of the range, 0 for the oldest
-- ARGV[6] max_bytes: 0 for no cut
-- Returns {0} when the user is not a member, else
--   {1, joined, seq, epoch, first, available, entry...}
-- where available counts the seqs of the range inside the window (returned
-- or not) and entries are in ascending seq order.
local joined = redis.call('HGET', KEYS[3], ARGV[1])
if not joined then
  return {0}
end
joined = tonumber(joined)
local m = redis.call('HMGET', KEYS[1], 'seq', 'epoch', 'first')
local seq = tonumber(m[1]) or 0
local epoch = m[2] or '0'
local first = tonumber(m[3]) or (seq + 1)

local lo = math.max(tonumber(ARGV[2]), joined, first - 1)
local hi = tonumber(ARGV[3])
if hi == 0 or hi > seq + 1 then
  hi = seq + 1
end
local available = hi - lo - 1
if available < 0 then
  available = 0
end
local n = math.min(available, tonumber(ARGV[4]))
local out = {1, joined, seq, epoch, first, available}
if n <= 0 then
  return out
end
local from_top = ARGV[5] == '1'
local a, b = lo + 1, lo + n
if from_top then
  a, b = hi - n, hi - 1
end
local entries = redis.call('LRANGE', KEYS[2], a - first, b - first)

local max_bytes = tonumber(ARGV[6])
local keep_from, keep_to = 1, #entries
if max_bytes > 0 and #entries > 0 then
  if from_top then
    keep_from = #entries
    local used = #entries[keep_from]
    while keep_from > 1 and used + #entries[keep_from - 1] <= max_bytes do
      keep_from = keep_from - 1
      used = used + #entries[keep_from]
    end
  else
    keep_to = 1
    local used = #entries[1]
    while keep_to < #entries and used + #entries[keep_to + 1] <= max_bytes do
      keep_to = keep_to + 1
      used = used + #entries[keep_to]
    end
  end
end
for i = keep_from, keep_to do
  out[#out + 1] = entries[i]
end
return out
