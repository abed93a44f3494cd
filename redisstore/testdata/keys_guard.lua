-- keys_guard.lua, for tests only: prepended to a script of this package (or
-- of live/lua, whose tests read it from here), it makes the script fail the
-- moment it calls Redis on a key that is not one of its KEYS (on Redis
-- Cluster such a key may live on another node, and nothing else would
-- notice while every key shares the hash tag).
-- A command it does not know fails too, so that the table below is
-- completed rather than the check skipped.
local guard_keys = {}
for _, k in ipairs(KEYS) do guard_keys[k] = true end

-- which arguments are keys: 1 the first, 2 the first two, 'all' every one
local guard_pos = {
  del = 'all', exists = 'all', unlink = 'all', touch = 'all',
  rename = 2, renamenx = 2,
  get = 1, set = 1, type = 1, persist = 1, pexpire = 1, expire = 1, expireat = 1, pexpireat = 1, ttl = 1, pttl = 1,
  hset = 1, hget = 1, hmget = 1, hsetnx = 1, hgetall = 1, hdel = 1, hlen = 1, hincrby = 1, hscan = 1, hexists = 1,
  zadd = 1, zrem = 1, zrange = 1, zrangebyscore = 1, zrevrangebyscore = 1, zrangebylex = 1, zlexcount = 1,
  zcard = 1, zscan = 1, zscore = 1, zcount = 1, zremrangebyscore = 1,
  sadd = 1, srem = 1, smembers = 1, sismember = 1, scard = 1,
  lrange = 1, lindex = 1, llen = 1, lpop = 1, rpop = 1, rpush = 1, lpush = 1, ltrim = 1,
  -- a channel is not a key (the scripts keep it in their keys' slot)
  publish = 0, spublish = 0,
}

local function guard_check(cmd, ...)
  local c = string.lower(cmd)
  local pos = guard_pos[c]
  if pos == nil then error('keys guard: command ' .. c .. ' is not in the guard table') end
  local args = {...}
  local n = #args
  if pos ~= 'all' then n = math.min(pos, n) end
  for i = 1, n do
    if not guard_keys[args[i]] then
      error('keys guard: ' .. c .. ' on ' .. tostring(args[i]) .. ', which is not in KEYS')
    end
  end
end

local guard_redis = redis
local redis = setmetatable({
  call = function(cmd, ...)
    guard_check(cmd, ...)
    return guard_redis.call(cmd, ...)
  end,
  pcall = function(cmd, ...)
    guard_check(cmd, ...)
    return guard_redis.pcall(cmd, ...)
  end,
}, {__index = guard_redis})
