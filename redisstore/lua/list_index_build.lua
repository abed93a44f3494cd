-- Builds, a bounded step per call, the list indexes of a user whose inbox
-- is older than them: lg (the conversations whose C:t is L) from an HSCAN
-- of the inbox, mx (the mention lane's members, scored 0) from a ZSCAN of
-- the lane. The cursors live in ix between calls; once both scans ended,
-- ix v = 1 and readers use the indexes.
--
-- Writes that happen meanwhile keep the indexes themselves (apply_inbox,
-- read_receipt and expiry maintain them whether built or not), and each
-- step reads what it adds as it is then, so the build converges to the
-- inbox whatever runs between its steps.
--
-- KEYS[1] inbox index (hash: C:t fields)
-- KEYS[2] mention lane (zset: "C:SEQ" -> write ms)
-- KEYS[3] large groups (set of conv)
-- KEYS[4] mention index (zset: "C:SEQ" -> 0)
-- KEYS[5] list index state (hash: v, hc inbox scan cursor, hd inbox scan
--         done, zc lane scan cursor, zd lane scan done)
-- KEYS[6] the user's profile (hash; loc = hot: the keys moved away)
-- ARGV[1] SCAN COUNT of one step (per scan)
-- Returns 1 once the indexes are complete, 0 while steps remain. Fails with
-- OBMOVED when the user's keys were moved to the hot store.
local ib, mn, lg, mx, ix, prof = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local count = tonumber(ARGV[1])
if redis.call('HGET', prof, 'loc') == 'hot' then
  return redis.error_reply('OBMOVED user lives on the hot store')
end
-- add runs cmd over values in slices small enough for unpack.
local function add(cmd, key, vals, width)
  local step = 500 * width
  for i = 1, #vals, step do
    redis.call(cmd, key, unpack(vals, i, math.min(i + step - 1, #vals)))
  end
end

local st = redis.call('HMGET', ix, 'v', 'hc', 'hd', 'zc', 'zd')
if st[1] == '1' then return 1 end
local hdone, zdone = st[3] == '1', st[5] == '1'

if not hdone then
  local r = redis.call('HSCAN', ib, st[2] or '0', 'MATCH', '*:t', 'COUNT', count)
  local adds = {}
  for i = 1, #r[2], 2 do
    if r[2][i + 1] == 'L' then adds[#adds + 1] = string.sub(r[2][i], 1, -3) end
  end
  add('SADD', lg, adds, 1)
  hdone = r[1] == '0'
  redis.call('HSET', ix, 'hc', r[1], 'hd', hdone and '1' or '0')
end

if not zdone then
  local r = redis.call('ZSCAN', mn, st[4] or '0', 'COUNT', count)
  local adds = {}
  for i = 1, #r[2], 2 do
    adds[#adds + 1] = 0
    adds[#adds + 1] = r[2][i]
  end
  add('ZADD', mx, adds, 2)
  zdone = r[1] == '0'
  redis.call('HSET', ix, 'zc', r[1], 'zd', zdone and '1' or '0')
end

if hdone and zdone then
  redis.call('HDEL', ix, 'hc', 'hd', 'zc', 'zd')
  redis.call('HSET', ix, 'v', 1)
  return 1
end
return 0
