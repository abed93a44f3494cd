-- The conversation list script before its indexes (kept as the baseline of
-- bench/convlist): it scans the whole inbox for large groups and the whole
-- mention lane on every call.
--
-- Reads one page of a user's conversation list with everything the list
-- shows, in one snapshot of the user's slot: the next `limit` small
-- conversations in order of last activity after the page cursor, and every
-- large group of the user (their order comes from the conversations
-- themselves, which live in other slots; the caller merges them in).
--
-- A user's large groups are the inbox fields C:t = L (no per-user set
-- repeats them: it would cost a key per member of every large group). They
-- are found by one HSCAN of the inbox for the `:t` fields, which is linear
-- in the user's conversations, not in their messages; the page itself
-- stays one indexed range of the list.
--
-- KEYS[1] conversation list (zset: conv -> last activity ms)
-- KEYS[2] inbox index (hash: C:l, C:u, C:r, C:j, C:t)
-- KEYS[3] previews (hash: conv -> preview JSON)
-- KEYS[4] mention lane (zset: "C:SEQ" -> write ms)
-- KEYS[5] the device's cursor (hash: conv -> acked seq); any absent key
--         when no device is named
-- KEYS[6] the user's profile (hash; loc = hot: the keys moved away)
-- ARGV[1] page cursor score: conversations at or below it ("+inf" first)
-- ARGV[2] page cursor conv: among conversations scored exactly ARGV[1],
--         only those ordered after it ("" for none)
-- ARGV[3] limit
-- Returns {n_small, record...}: n_small records of small conversations in
-- list order, then one per large group. A record is 10 values: conv,
-- activity ("" for large groups), last, unread, read, joined, type (each ""
-- when absent), preview JSON (""), the device's acked seq (""), and the
-- number of mentions of the conversation in the lane. Fails with OBMOVED
-- when the user's keys were moved to the hot store: this copy is stale.
if redis.call('HGET', KEYS[6], 'loc') == 'hot' then
  return redis.error_reply('OBMOVED user lives on the hot store')
end
local limit = tonumber(ARGV[3])
local after = ARGV[2]
local cursor_score = tonumber(ARGV[1])

local mentions = {}
for _, m in ipairs(redis.call('ZRANGE', KEYS[4], 0, -1)) do
  local conv = string.match(m, '^([^:]+):')
  if conv then
    mentions[conv] = (mentions[conv] or 0) + 1
  end
end

local large = {}
local cursor = '0'
repeat
  local r = redis.call('HSCAN', KEYS[2], cursor, 'MATCH', '*:t', 'COUNT', 1000)
  cursor = r[1]
  for i = 1, #r[2], 2 do
    if r[2][i + 1] == 'L' then
      large[string.sub(r[2][i], 1, -3)] = true
    end
  end
until cursor == '0'

local out = {0}
local function record(conv, activity)
  local f = redis.call('HMGET', KEYS[2], conv .. ':l', conv .. ':u', conv .. ':r', conv .. ':j', conv .. ':t')
  out[#out + 1] = conv
  out[#out + 1] = activity
  for i = 1, 5 do
    out[#out + 1] = f[i] or ''
  end
  out[#out + 1] = redis.call('HGET', KEYS[3], conv) or ''
  out[#out + 1] = redis.call('HGET', KEYS[5], conv) or ''
  out[#out + 1] = mentions[conv] or 0
end

local offset, batch, n = 0, limit + 16, 0
while n < limit do
  local page = redis.call('ZREVRANGEBYSCORE', KEYS[1], ARGV[1], '-inf', 'WITHSCORES', 'LIMIT', offset, batch)
  for i = 1, #page, 2 do
    local conv, score = page[i], page[i + 1]
    local skip = after ~= '' and tonumber(score) == cursor_score and conv >= after
    if n < limit and not skip and not large[conv] then
      record(conv, score)
      n = n + 1
    end
  end
  if #page < 2 * batch then
    break
  end
  offset = offset + batch
end
out[1] = n
for conv in pairs(large) do
  record(conv, '')
end
return out
