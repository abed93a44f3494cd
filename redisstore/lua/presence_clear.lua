-- Marks a device's connection closed, only while the entry still names
-- this connection: a newer connection of the device (on this node or
-- another) has already replaced it and must stay registered.
--
-- KEYS[1] the user's presence (hash: device -> value)
-- ARGV[1] device id
-- ARGV[2] connection id
-- ARGV[3] now, ms
-- Returns 1 when the entry was this connection's, else 0.
local now = ARGV[3]
local key = KEYS[1]
local dev, conn = ARGV[1], ARGV[2]
local v = redis.call('HGET', key, dev)
if not v then
  return 0
end
local c = string.match(v, '^[^|]*|([^|]*)|')
if c ~= conn then
  return 0
end
redis.call('HSET', key, dev, '-|' .. conn .. '|' .. now)
return 1
