-- Reads a slice of a conversation's timeline for one member, together with
-- the conversation's counters, as one snapshot (the head of the timeline may
-- be popped by expiry at any moment; reading meta and entries separately
-- could pair a stale `first` with shifted indexes).
--
-- The slice is the seqs in (lo, hi) that the user may see: those of the
-- spans they belonged to (after the seq at which they joined, and before
-- the seq of their leave for the spans that ended) and inside the Redis
-- window. A former member reads exactly the spans they belonged to; a user
-- who left and came back reads each span, nothing between. Of those seqs
-- one span is sliced (the newest span of the range when from_top is 1, the
-- oldest otherwise), at most `limit` of it: the newest ones when from_top
-- is 1, the oldest otherwise. With max_bytes > 0 the slice is cut further,
-- from the far end, so that the raw entries stay within max_bytes (at
-- least one entry is always kept): the cut of the sync byte budget
-- (sync_budget.go) and of a page.
--
-- KEYS[1] conversation meta (hash)
-- KEYS[2] conversation timeline (list)
-- KEYS[3] conversation members (hash: user -> seq of joining)
-- KEYS[4] former members (hash: user -> "JOINED-LEFT,..." spans that ended)
-- ARGV[1] user id
-- ARGV[2] lo: exclusive lower seq bound
-- ARGV[3] hi: exclusive upper seq bound, 0 for none
-- ARGV[4] limit: most entries returned
-- ARGV[5] from_top: 1 for the newest entries of the range, 0 for the oldest
-- ARGV[6] max_bytes: 0 for no cut
-- Returns {0} when the user never was a member, else
--   {1, floor, seq, epoch, first, available, entry...}
-- where floor is one below the lowest seq of the range the user may read
-- (in the window or not), seq the conversation's max seq (for a former
-- member: the last seq they may read), available counts the seqs of the
-- range the user may read inside the window (returned or not, every span)
-- and entries are in ascending seq order.
local meta, tl, mem, past_mem = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local user, lo_arg, hi_arg, limit = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local from_top_arg, max_bytes_arg = ARGV[5], ARGV[6]
local joined = redis.call('HGET', mem, user)
local past = redis.call('HGET', past_mem, user)
if not joined and not past then
  return {0}
end
local m = redis.call('HMGET', meta, 'seq', 'epoch', 'first')
local seq = tonumber(m[1]) or 0
local epoch = m[2] or '0'
local first = tonumber(m[3]) or (seq + 1)

-- spans: the seqs the user may read, {from, to} inclusive, ascending
local spans = {}
for j, l in string.gmatch(past or '', '(%d+)-(%d+)') do
  spans[#spans + 1] = {tonumber(j) + 1, tonumber(l) - 1}
end
local top = seq
if joined then
  spans[#spans + 1] = {tonumber(joined) + 1, seq}
elseif #spans > 0 then
  top = spans[#spans][2]
end

local lo_asked = tonumber(lo_arg)
local lo = math.max(lo_asked, first - 1)
local hi = tonumber(hi_arg)
if hi == 0 or hi > seq + 1 then
  hi = seq + 1
end
local from_top = from_top_arg == '1'
local available, pick, low = 0, nil, nil
for _, sp in ipairs(spans) do
  local a, b = math.max(sp[1], lo + 1), math.min(sp[2], hi - 1)
  if a <= b then
    available = available + b - a + 1
    if not pick or from_top then pick = {a, b} end
  end
  local la = math.max(sp[1], lo_asked + 1)
  if not low and la <= math.min(sp[2], hi - 1) then low = la end
end
local out = {1, (low or hi) - 1, top, epoch, first, available}
if not pick then
  return out
end
local n = math.min(pick[2] - pick[1] + 1, tonumber(limit))
if n <= 0 then
  return out
end
local a, b = pick[1], pick[1] + n - 1
if from_top then
  a, b = pick[2] - n + 1, pick[2]
end
-- With a byte cut, the entries are read in chunks from the end the slice
-- keeps, each sized by the entries seen so far, and reading stops once the
-- cut is reached: a capped slice keeps a few of up to `limit` entries, and
-- copying the others into Lua (and interning them) was most of what a sync
-- cost Redis.
local max_bytes = tonumber(max_bytes_arg)
if max_bytes <= 0 then
  local entries = redis.call('LRANGE', tl, a - first, b - first)
  for i = 1, #entries do
    out[#out + 1] = entries[i]
  end
  return out
end
local kept = {}
local used = 0
local chunk = 16
local next_a, next_b = a, b
local full = false
while not full and next_a <= next_b do
  local ca, cb
  if from_top then
    ca, cb = math.max(next_a, next_b - chunk + 1), next_b
    next_b = ca - 1
  else
    ca, cb = next_a, math.min(next_b, next_a + chunk - 1)
    next_a = cb + 1
  end
  local entries = redis.call('LRANGE', tl, ca - first, cb - first)
  local from, to, step = 1, #entries, 1
  if from_top then
    from, to, step = #entries, 1, -1
  end
  for i = from, to, step do
    local size = #entries[i]
    if #kept > 0 and used + size > max_bytes then
      full = true
      break
    end
    used = used + size
    kept[#kept + 1] = entries[i]
  end
  -- The next chunk is what the entries seen so far say is left to fill,
  -- plus one; never fewer than 4, so that small entries do not cost a
  -- call each.
  if not full and used > 0 then
    chunk = math.max(4, math.ceil((max_bytes - used) * #kept / used) + 1)
  end
end
-- kept runs from the kept end inwards; the answer is in ascending seq order.
if from_top then
  for i = #kept, 1, -1 do
    out[#out + 1] = kept[i]
  end
else
  for i = 1, #kept do
    out[#out + 1] = kept[i]
  end
end
return out
