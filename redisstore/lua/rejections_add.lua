-- rejections_add.lua: keep the refusals of one sender's records, so that a
-- device offline when the pipeline refused its message learns it on its
-- next pull (the live frame is only the early word). The list is bounded
-- in age and count, and a replayed refusal changes nothing: its member is
-- the same text, scored by the dead letter's own time.
--
-- KEYS[1]  P{u:U}:rj  zset: refusal JSON {"conv_id","client_msg_id",
--          "reason","at_ms"} scored by at_ms
-- ARGV[1]  now, ms (the caller's clock)
-- ARGV[2]  keep, ms: refusals older than now - keep go
-- ARGV[3]  at most this many are kept (the oldest go first)
-- ARGV[4..] pairs: at_ms, refusal JSON
-- Returns how many of the refusals were new.
local key = KEYS[1]
local now, keep, most = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])

local added = 0
for i = 4, #ARGV, 2 do
  added = added + redis.call('ZADD', key, 'NX', ARGV[i], ARGV[i + 1])
end
redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. (now - keep))
local n = redis.call('ZCARD', key)
if n > most then
  redis.call('ZREMRANGEBYRANK', key, 0, n - most - 1)
end
if n > 0 then
  redis.call('PEXPIREAT', key, now + keep)
end
return added
