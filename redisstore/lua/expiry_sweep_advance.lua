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
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local field = ARGV[2] .. ':cursor'
if (redis.call('HGET', KEYS[2], field) or '0') ~= ARGV[3] then
  return 0
end
redis.call('HSET', KEYS[2], field, ARGV[4])
if ARGV[4] == '0' then
  redis.call('HINCRBY', KEYS[2], ARGV[2] .. ':cycle', 1)
  redis.call('HSET', KEYS[2], ARGV[2] .. ':done', ARGV[5])
  redis.call('DEL', KEYS[1])
end
return 1
