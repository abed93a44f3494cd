-- Raises a registered device's cursor: the lean step of an ack, for a
-- device whose live connection already registered it (ack_cursor.lua ran
-- for it on this connection). The device set is not counted and nothing
-- is evicted: the device is only checked to be still in the set (an
-- eviction by another device's ack may have taken it out since), and its
-- last use is written again only when the one held is older than the
-- touch interval, so that most acks write the cursor alone. A device no
-- longer in the set changes nothing here: the caller runs ack_cursor.lua
-- for it, which registers it afresh and tells it to resync.
--
-- Cursor fields as in ack_cursor.lua: C -> highest seq acked; C:e -> its
-- epoch. A newer epoch replaces the cursor, the same epoch only raises
-- it, an older one is ignored.
--
-- KEYS[1] the user's devices (zset: device -> last use ms)
-- KEYS[2] the acking device's cursor (hash)
-- KEYS[3] the user's profile (hash; loc = hot: the keys moved away)
-- ARGV[1] device id
-- ARGV[2] now, ms
-- ARGV[3] touch interval, ms: the last use is written again when older
-- ARGV[4 ..] triples: conversation, seq, epoch
-- Returns STATUS_RAISED, or STATUS_UNREGISTERED (nothing changed: the
-- device is not in the set). Fails with OBMOVED when the user's keys were
-- moved to the hot store.
local REFUSAL_MOVED = 'OBMOVED'
local STATUS_RAISED = 0
local STATUS_UNREGISTERED = 1
local devices, cursor, prof = KEYS[1], KEYS[2], KEYS[3]
local dev, now, touch = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
if redis.call('HGET', prof, 'loc') == 'hot' then
  return redis.error_reply(REFUSAL_MOVED .. ' user lives on the hot store')
end
local used = redis.call('ZSCORE', devices, dev)
if not used then
  return STATUS_UNREGISTERED
end
if now - tonumber(used) >= touch then
  redis.call('ZADD', devices, now, dev)
end
local fields, at = {}, {}
for i = 4, #ARGV, 3 do
  local conv = ARGV[i]
  if not at[conv] then
    at[conv] = #fields + 1
    fields[#fields + 1] = conv
    fields[#fields + 1] = conv .. ':e'
  end
end
if #fields == 0 then
  return STATUS_RAISED
end
-- One HMGET and one HSET, in chunks within Lua's argument limit.
local held = {}
for i = 1, #fields, 500 do
  local part = redis.call('HMGET', cursor, unpack(fields, i, math.min(i + 499, #fields)))
  for j = 1, #part do held[i + j - 1] = part[j] end
end
local changed = {}
for i = 4, #ARGV, 3 do
  local f = at[ARGV[i]]
  local seq, epoch = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  local cur, cur_epoch = tonumber(held[f] or '0'), tonumber(held[f + 1] or '0')
  if epoch > cur_epoch then
    held[f], held[f + 1] = ARGV[i + 1], ARGV[i + 2]
    changed[f], changed[f + 1] = true, true
  elseif epoch == cur_epoch and seq > cur then
    held[f] = ARGV[i + 1]
    changed[f] = true
  end
end
local writes = {}
for f = 1, #fields do
  if changed[f] then
    writes[#writes + 1] = fields[f]
    writes[#writes + 1] = held[f]
  end
end
for i = 1, #writes, 500 do
  redis.call('HSET', cursor, unpack(writes, i, math.min(i + 499, #writes)))
end
return STATUS_RAISED
