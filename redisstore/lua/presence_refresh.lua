-- Extends the lease of a node's connections of one user, each only while
-- its entry still names that connection, and names those whose entry
-- names another: a newer connection of the device took it elsewhere (the
-- word to close them may have been lost).
--
-- KEYS[1] the user's presence (hash: device -> value)
-- ARGV[1] node id
-- ARGV[2] new expiry, ms
-- ARGV[3] key lifetime, ms
-- ARGV[4..] pairs: device, connection id
-- Returns the connection ids of ARGV whose device's entry names another
-- connection.
local lifetime = ARGV[3]
local key, node, exp = KEYS[1], ARGV[1], ARGV[2]
local n = 0
local replaced = {}
for i = 4, #ARGV, 2 do
  local dev, conn = ARGV[i], ARGV[i + 1]
  local v = redis.call('HGET', key, dev)
  if v then
    if string.match(v, '^[^|]*|([^|]*)|') == conn then
      redis.call('HSET', key, dev, node .. '|' .. conn .. '|' .. exp)
      n = n + 1
    else
      replaced[#replaced + 1] = conn
    end
  end
end
if n > 0 then
  redis.call('PEXPIRE', key, lifetime)
end
return replaced
