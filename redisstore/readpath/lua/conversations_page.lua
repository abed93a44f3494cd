-- Reads one page of a user's conversation list with everything the list
-- shows, in one snapshot of the user's slot: the next `limit` small
-- conversations in order of last activity after the page cursor, and every
-- large group of the user (their order comes from the conversations
-- themselves, which live in other slots; the caller merges them in).
--
-- Its work is sized by its answer: one indexed range of the list, the
-- fields of the conversations answered in one read per hash, and per
-- conversation one range count of the mention index. The user's large groups come whole from the inbox field
-- :lg (large groups that were small once may still sit in the list; the
-- page skips them). The indexes (:lg, mx) are kept by the scripts that
-- change what they index; a user whose indexes are not complete yet (no
-- :ix = 1: an inbox older than them) gets OBINDEX, and the caller builds
-- them with list_index_build.lua and asks again.
--
-- KEYS[1] conversation list (zset: conv -> last activity ms)
-- KEYS[2] inbox index (hash: C:l, C:r, C:j, C:t; :lg, :ix)
-- KEYS[3] previews (hash: conv -> preview JSON)
-- KEYS[4] mention index (zset: "C:SEQ" -> 0, the mention lane's members)
-- KEYS[5] the device's cursor (hash: conv -> acked seq); any absent key
--         when no device is named
-- KEYS[6] the user's profile (hash; loc = hot: the keys moved away)
-- ARGV[1] page cursor score: conversations at or below it ("+inf" first)
-- ARGV[2] page cursor conv: among conversations scored exactly ARGV[1],
--         only those ordered after it ("" for none)
-- ARGV[3] limit
-- Returns {n_small, record...}: n_small records of small conversations in
-- list order, then one per large group. A record is 9 values: conv,
-- activity ("" for large groups), last, read, joined, type (each ""
-- when absent; unread is last - read, the caller's to derive), preview JSON (""), the device's acked seq (""), and the
-- number of mentions of the conversation in the lane. Fails with OBMOVED
-- when the user's keys were moved to the hot store: this copy is stale.
local REFUSAL_MOVED = 'OBMOVED'
local REFUSAL_UNINDEXED = 'OBINDEX'
local cursor_arg, after, limit_arg = ARGV[1], ARGV[2], ARGV[3]
local cl, ib, pv, mx, cur, prof = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
if redis.call('HGET', prof, 'loc') == 'hot' then
  return redis.error_reply(REFUSAL_MOVED .. ' user lives on the hot store')
end
local idx = redis.call('HMGET', ib, ':ix', ':lg')
if idx[1] ~= '1' then
  if redis.call('EXISTS', ib) == 0 then return {0} end
  return redis.error_reply(REFUSAL_UNINDEXED .. ' the list indexes of this user are not built yet')
end
local limit = tonumber(limit_arg)
local cursor_score = tonumber(cursor_arg)

local large = {}
for conv in string.gmatch(idx[2] or '', '[^\n]+') do
  large[conv] = true
end

-- The page's conversations: the next `limit` small ones in list order,
-- then every large group; their fields are read once the page is known,
-- each hash in one HMGET (a chunk at a time) rather than a command per
-- conversation and field.
local convs, activities = {}, {}
local offset, batch, n = 0, limit + 16, 0
while n < limit do
  local page = redis.call('ZREVRANGEBYSCORE', cl, cursor_arg, '-inf', 'WITHSCORES', 'LIMIT', offset, batch)
  for i = 1, #page, 2 do
    local conv, score = page[i], page[i + 1]
    local skip = after ~= '' and tonumber(score) == cursor_score and conv >= after
    if n < limit and not skip and not large[conv] then
      convs[#convs + 1], activities[#activities + 1] = conv, score
      n = n + 1
    end
  end
  if #page < 2 * batch then
    break
  end
  offset = offset + batch
end
for conv in pairs(large) do
  convs[#convs + 1], activities[#activities + 1] = conv, ''
end

-- hmget reads fields of key in chunks that stay within Lua's argument
-- limit; the values are in the order of fields.
local function hmget(key, fields)
  local vals = {}
  for i = 1, #fields, 500 do
    local part = redis.call('HMGET', key, unpack(fields, i, math.min(i + 499, #fields)))
    for j = 1, #part do vals[i + j - 1] = part[j] end
  end
  return vals
end

local inbox_fields = {}
for _, conv in ipairs(convs) do
  for _, f in ipairs({':l', ':r', ':j', ':t'}) do
    inbox_fields[#inbox_fields + 1] = conv .. f
  end
end
local inbox_vals = hmget(ib, inbox_fields)
local preview_vals = hmget(pv, convs)
local acked_vals = hmget(cur, convs)

-- A record is the values of one conversation; a value added to the list
-- answer goes at the end here and raises listRecordLen (conversations.go).
local out = {n}
for c, conv in ipairs(convs) do
  out[#out + 1] = conv
  out[#out + 1] = activities[c]
  for i = 1, 4 do
    out[#out + 1] = inbox_vals[4 * (c - 1) + i] or ''
  end
  out[#out + 1] = preview_vals[c] or ''
  out[#out + 1] = acked_vals[c] or ''
  out[#out + 1] = redis.call('ZLEXCOUNT', mx, '[' .. conv .. ':', '(' .. conv .. ';')
end
return out
