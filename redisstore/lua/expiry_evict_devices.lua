-- Evicts a user's devices that were unused for longer than the inbox window
-- and, beyond the most allowed, the least recently used ones. An evicted
-- device loses its cursor and is remembered in the evicted set, so that when
-- it returns it is told to resync in full rather than trusted.
--
-- Both kinds are the least recently used devices, so at most ARGV[3] of
-- them, the first of the device set by last use: the caller names those,
-- with their cursors in KEYS.
--
-- KEYS[1] the user's devices (zset: device -> last use in ms)
-- KEYS[2] the user's evicted devices (set)
-- KEYS[3 .. 2+k] the cursors of the devices ARGV names, in that order
-- ARGV[1] most devices kept
-- ARGV[2] cutoff in ms: devices last used before it are evicted
-- ARGV[3] most devices evicted by this call
-- ARGV[4] k: how many devices follow
-- ARGV[5 .. 4+k] device ids (the caller's read of the least recently used)
-- Returns the number of devices evicted. Fails with OBDEVICES, changing
-- nothing, when a device to evict is not among those named (the set
-- changed since the caller read it).
local REFUSAL_DEVICES = 'OBDEVICES'
local devices, evicted = KEYS[1], KEYS[2]
local most, cutoff = ARGV[1], ARGV[2]
local limit = tonumber(ARGV[3])
local k = tonumber(ARGV[4])
local cursor_of = {}
for i = 1, k do cursor_of[ARGV[4 + i]] = KEYS[2 + i] end

local victims, chosen = {}, {}
local function choose(dev)
  if not chosen[dev] then
    chosen[dev] = true
    victims[#victims + 1] = dev
  end
end
for _, dev in ipairs(redis.call('ZRANGEBYSCORE', devices, '-inf', '(' .. cutoff, 'LIMIT', 0, limit)) do
  choose(dev)
end
local over = redis.call('ZCARD', devices) - #victims - tonumber(most)
if over > limit - #victims then
  over = limit - #victims
end
if over > 0 then
  for _, dev in ipairs(redis.call('ZRANGE', devices, 0, #victims + over - 1)) do
    choose(dev)
  end
end
for _, dev in ipairs(victims) do
  if not cursor_of[dev] then
    return redis.error_reply(REFUSAL_DEVICES .. ' device ' .. dev .. ' was not named')
  end
end
for _, dev in ipairs(victims) do
  redis.call('DEL', cursor_of[dev])
  redis.call('SADD', evicted, dev)
  redis.call('ZREM', devices, dev)
end
return #victims
