-- Records that the lease holder finished one scan step of a node: the next
-- cursor, and when the cursor came back to 0, the end of a cycle (which also
-- releases the lease). A caller that lost its lease records nothing: the
-- new holder may have moved on already.
--
-- KEYS[1] the node's lease
-- KEYS[2] the sweep state (hash)
-- ARGV[1] the caller's token
-- ARGV[2] the node's name
-- ARGV[3] the cursor the step started from
-- ARGV[4] the next cursor ("0": the cycle is complete)
-- ARGV[5] now in ms
-- Returns 1 if recorded, 0 if the lease was not the caller's.
local lease, state = KEYS[1], KEYS[2]
local token, node, from_cursor, next_cursor = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local now = ARGV[5]
if redis.call('GET', lease) ~= token then
  return 0
end
local field = node .. ':cursor'
if (redis.call('HGET', state, field) or '0') ~= from_cursor then
  return 0
end
redis.call('HSET', state, field, next_cursor)
if next_cursor == '0' then
  redis.call('HINCRBY', state, node .. ':cycle', 1)
  redis.call('HSET', state, node .. ':done', now)
  redis.call('DEL', lease)
end
return 1
