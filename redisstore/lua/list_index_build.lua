-- Builds, a bounded step per call, the list indexes of a user whose inbox
-- is older than them: the inbox field :lg (the conversations whose C:t is
-- L) from an HSCAN of the inbox, mx (the mention lane's members, scored 0)
-- from a ZSCAN of the lane. The scan cursors live in the inbox fields :ixh
-- and :ixz between calls ('done' once a scan ended); when both ended, :ix
-- = 1 and readers use the indexes.
--
-- Writes that happen meanwhile keep the indexes themselves (apply_inboxes,
-- read_receipt and expiry maintain them whether built or not), and each
-- step reads what it adds as it is then, so the build converges to the
-- inbox whatever runs between its steps.
--
-- KEYS[1] inbox index (hash: C:t fields; :lg, :ix, :ixh, :ixz)
-- KEYS[2] mention lane (zset: "C:SEQ" -> write ms)
-- KEYS[3] mention index (zset: "C:SEQ" -> 0)
-- KEYS[4] the user's profile (hash; loc = hot: the keys moved away)
-- ARGV[1] SCAN COUNT of one step (per scan)
-- Returns 1 once the indexes are complete (or there is no inbox to index),
-- 0 while steps remain. Fails with OBMOVED when the user's keys were moved
-- to the hot store.
local REFUSAL_MOVED = 'OBMOVED'
local ib, mn, mx, prof = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local count = tonumber(ARGV[1])
if redis.call('HGET', prof, 'loc') == 'hot' then
  return redis.error_reply(REFUSAL_MOVED .. ' user lives on the hot store')
end
if redis.call('EXISTS', ib) == 0 then return 1 end
local st = redis.call('HMGET', ib, ':ix', ':ixh', ':ixz', ':lg')
if st[1] == '1' then return 1 end
local hc, zc, lg = st[2] or '0', st[3] or '0', st[4] or '\n'

if hc ~= 'done' then
  local r = redis.call('HSCAN', ib, hc, 'MATCH', '*:t', 'COUNT', count)
  for i = 1, #r[2], 2 do
    local conv = string.sub(r[2][i], 1, -3)
    if r[2][i + 1] == 'L' and not string.find(lg, '\n' .. conv .. '\n', 1, true) then
      lg = lg .. conv .. '\n'
    end
  end
  if lg ~= '\n' then redis.call('HSET', ib, ':lg', lg) end
  hc = r[1]
  if hc == '0' then hc = 'done' end
  redis.call('HSET', ib, ':ixh', hc)
end

if zc ~= 'done' then
  local r = redis.call('ZSCAN', mn, zc, 'COUNT', count)
  local adds = {}
  for i = 1, #r[2], 2 do
    adds[#adds + 1] = 0
    adds[#adds + 1] = r[2][i]
  end
  for i = 1, #adds, 1000 do
    redis.call('ZADD', mx, unpack(adds, i, math.min(i + 999, #adds)))
  end
  zc = r[1]
  if zc == '0' then zc = 'done' end
  redis.call('HSET', ib, ':ixz', zc)
end

if hc == 'done' and zc == 'done' then
  redis.call('HDEL', ib, ':ixh', ':ixz')
  redis.call('HSET', ib, ':ix', 1)
  return 1
end
return 0
