-- Applies a user's read receipts: per conversation, the read seq rises to
-- the receipt's seq (never falls), so unread (what was delivered above it,
-- C:l - C:r, derived by readers) falls, and the conversation's @mentions up
-- to it leave the mention lane. Applying the same receipts again changes
-- nothing.
--
-- KEYS[1] the user's inbox index (hash: C:l, C:r, ...)
-- KEYS[2] the user's mention lane (zset: "C:SEQ" -> write ms)
-- KEYS[3] the user's profile (hash; loc = hot: the keys moved away)
-- KEYS[4] the user's mention index (zset: the lane's members, scored 0),
--         kept with the lane; each conversation's references are found in
--         its range once the index is complete (inbox field :ix = 1)
-- ARGV pairs: conversation, read seq
-- Returns the number of conversations whose read seq rose. Fails with
-- OBMOVED when the user's keys were moved to the hot store.
local REFUSAL_MOVED = 'OBMOVED'
local ib, mn, prof, mx = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
if redis.call('HGET', prof, 'loc') == 'hot' then
  return redis.error_reply(REFUSAL_MOVED .. ' user lives on the hot store')
end
local raised = 0
local reads = {}
for i = 1, #ARGV, 2 do
  local conv, r = ARGV[i], tonumber(ARGV[i + 1])
  local cur = tonumber(redis.call('HGET', ib, conv .. ':r') or '0')
  if r > cur then
    redis.call('HSET', ib, conv .. ':r', ARGV[i + 1])
    raised = raised + 1
  else
    r = cur
  end
  reads[conv] = r
end
local drop = {}
local function consider(m)
  local conv, seq = string.match(m, '^([^:]+):(%d+)$')
  if conv and reads[conv] and tonumber(seq) <= reads[conv] then
    drop[#drop + 1] = m
  end
end
if redis.call('HGET', ib, ':ix') == '1' then
  for conv in pairs(reads) do
    for _, m in ipairs(redis.call('ZRANGEBYLEX', mx, '[' .. conv .. ':', '(' .. conv .. ';')) do consider(m) end
  end
else
  for _, m in ipairs(redis.call('ZRANGE', mn, 0, -1)) do consider(m) end
end
for i = 1, #drop, 500 do
  redis.call('ZREM', mn, unpack(drop, i, math.min(i + 499, #drop)))
  redis.call('ZREM', mx, unpack(drop, i, math.min(i + 499, #drop)))
end
return raised
