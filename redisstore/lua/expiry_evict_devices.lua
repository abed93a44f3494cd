-- Evicts a user's devices that were unused for longer than the inbox window
-- and, beyond the most allowed, the least recently used ones. An evicted
-- device loses its cursor and is remembered in the evicted set, so that when
-- it returns it is told to resync in full rather than trusted.
--
-- KEYS[1] the user's devices (zset: device -> last use in ms)
-- KEYS[2] the user's evicted devices (set)
-- ARGV[1] key prefix of the user's device cursors (the device id follows);
--         the cursor keys share the user's hash tag, hence the slot
-- ARGV[2] most devices kept
-- ARGV[3] cutoff in ms: devices last used before it are evicted
-- ARGV[4] most devices evicted by this call
-- Returns the number of devices evicted.
local limit = tonumber(ARGV[4])
local evicted = 0
local function evict(dev)
  redis.call('DEL', ARGV[1] .. dev)
  redis.call('SADD', KEYS[2], dev)
  redis.call('ZREM', KEYS[1], dev)
  evicted = evicted + 1
end
local idle = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '(' .. ARGV[3], 'LIMIT', 0, limit)
for _, dev in ipairs(idle) do
  evict(dev)
end
local over = redis.call('ZCARD', KEYS[1]) - tonumber(ARGV[2])
if over > limit - evicted then
  over = limit - evicted
end
if over > 0 then
  for _, dev in ipairs(redis.call('ZRANGE', KEYS[1], 0, over - 1)) do
    evict(dev)
  end
end
return evicted
