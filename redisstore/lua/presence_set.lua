-- Registers a device's live connection (device -> node and connection) and
-- prunes entries whose lease ran out. Presence is a lease: the holding node
-- refreshes it with every heartbeat; a node that dies stops refreshing and
-- its entries lapse.
--
-- Field values: "NODE|CONN|EXPIRES_MS" while connected, "-|CONN|LEFT_MS"
-- once the connection closed (kept for the offline threshold, so that the
-- next connection knows how long the device was away).
--
-- KEYS[1] the user's presence (hash: device -> value)
-- ARGV[1] device id
-- ARGV[2] node id
-- ARGV[3] connection id
-- ARGV[4] now, ms
-- ARGV[5] lease, ms
-- ARGV[6] how long a closed entry is kept, ms
-- ARGV[7] the most devices of the user connected at once (0: no bound)
-- Returns the device's previous value (or false). Refuses with
-- REFUSAL_LIVE_DEVICES, changing nothing, when the device is not
-- connected now and as many other devices of the user are.
local REFUSAL_LIVE_DEVICES = 'OBLIVEDEVICES'
local key = KEYS[1]
local dev, node, conn = ARGV[1], ARGV[2], ARGV[3]
local now, lease, keep = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local most = tonumber(ARGV[7])
if most > 0 then
  local online = 0
  local all = redis.call('HGETALL', key)
  for i = 1, #all, 2 do
    local n, t = string.match(all[i + 1], '^([^|]*)|[^|]*|(%d+)$')
    if all[i] ~= dev and n and n ~= '-' and tonumber(t) >= now then
      online = online + 1
    end
  end
  if online >= most then
    return redis.error_reply(REFUSAL_LIVE_DEVICES .. ' ' .. online .. ' other devices are connected')
  end
end
local prev = redis.call('HGET', key, dev)
redis.call('HSET', key, dev, node .. '|' .. conn .. '|' .. (now + lease))
local all = redis.call('HGETALL', key)
for i = 1, #all, 2 do
  local f, v = all[i], all[i + 1]
  local n, t = string.match(v, '^([^|]*)|[^|]*|(%d+)$')
  if f ~= dev and t then
    t = tonumber(t)
    if (n ~= '-' and t < now) or (n == '-' and t + keep < now) then
      redis.call('HDEL', key, f)
    end
  end
end
redis.call('PEXPIRE', key, math.max(lease, keep) * 2)
return prev
