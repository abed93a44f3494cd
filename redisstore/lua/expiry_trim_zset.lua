-- Removes the members of a sorted set scored below a cutoff, a bounded
-- number per call (ZREMRANGEBYSCORE without a bound could block the server
-- on a set that was never trimmed).
--
-- KEYS[1] sorted set scored by write time in ms
-- ARGV[1] cutoff: members scored below it go
-- ARGV[2] most members removed by this call
-- Returns the number of members removed.
local zset = KEYS[1]
local cutoff, most = ARGV[1], ARGV[2]
local old = redis.call('ZRANGEBYSCORE', zset, '-inf', '(' .. cutoff, 'LIMIT', 0, tonumber(most))
if #old == 0 then
  return 0
end
return redis.call('ZREM', zset, unpack(old))
