-- Records a device's batch ack: marks the device used, evicts the least
-- recently used devices above the most allowed, and raises the device's
-- cursor per conversation. Nothing is deleted from any timeline or lane
-- (ack is not delete): only cursors move.
--
-- A device that was evicted and acks again is registered afresh; the reply
-- tells the caller so that the device learns it must resync in full.
--
-- The cursor's fields and how an ack raises them: ack_cursor_lib.lua,
-- prepended.
--
-- KEYS[1] the user's devices (zset: device -> last use ms)
-- KEYS[2] the user's evicted devices (set)
-- KEYS[3] the acking device's cursor (hash)
-- KEYS[4] the user's profile (hash; loc = hot: the keys moved away)
-- KEYS[5 .. 4+k] the cursors of the devices ARGV names, in that order
-- ARGV[1] device id
-- ARGV[2] now, ms
-- ARGV[3] most devices kept
-- ARGV[4] k: how many devices follow (the caller's read of the device set;
--         the ones this ack evicts must be among them, so that every
--         cursor it deletes is in KEYS)
-- ARGV[5 .. 4+k] device ids
-- ARGV[5+k ..] triples: conversation, seq, epoch
-- Returns {was_evicted (0|1), evicted device...}. Fails with OBMOVED when
-- the user's keys were moved to the hot store (see schemas/redis-keys.md),
-- and with OBDEVICES, changing nothing, when a device it would evict is
-- not among those named (the set changed since the caller read it).
local REFUSAL_MOVED = 'OBMOVED'
local REFUSAL_DEVICES = 'OBDEVICES'
local devices, evicted, cursor, prof = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local dev, now, most, k_arg = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
if redis.call('HGET', prof, 'loc') == 'hot' then
  return redis.error_reply(REFUSAL_MOVED .. ' user lives on the hot store')
end
local k = tonumber(k_arg)
local cursor_of = {}
for i = 1, k do cursor_of[ARGV[4 + i]] = KEYS[4 + i] end

-- The devices to evict: the least recently used beyond the most kept,
-- never the acking one (its use is now).
local card = redis.call('ZCARD', devices)
if not redis.call('ZSCORE', devices, dev) then card = card + 1 end
local over = card - tonumber(most)
local victims = {}
if over > 0 then
  for _, old in ipairs(redis.call('ZRANGE', devices, 0, over)) do
    if old ~= dev and #victims < over then
      if not cursor_of[old] then
        return redis.error_reply(REFUSAL_DEVICES .. ' device ' .. old .. ' was not named')
      end
      victims[#victims + 1] = old
    end
  end
end

local was_evicted = redis.call('SREM', evicted, dev)
redis.call('ZADD', devices, now, dev)
local out = {was_evicted}
for _, old in ipairs(victims) do
  redis.call('ZREM', devices, old)
  redis.call('DEL', cursor_of[old])
  redis.call('SADD', evicted, old)
  out[#out + 1] = old
end
raise_cursor(cursor, 5 + k, #ARGV)
return out
