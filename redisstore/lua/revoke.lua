-- Records a revocation: the tokens of a user (or of one of their devices)
-- issued before a time are refused from then on. A field only rises, so
-- a revocation sent twice, or an older one arriving late, changes
-- nothing; the key lives at least as long as the tokens it refuses may.
--
-- KEYS[1] the user's revocations (hash: device, or ':' for every device,
--         -> revoked-before ms)
-- ARGV[1] the field (a device id, or ':')
-- ARGV[2] revoked before, ms
-- ARGV[3] how long the record is kept at least, ms
-- Returns the field's value now.
local key = KEYS[1]
local field, before, keep = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local cur = tonumber(redis.call('HGET', key, field) or '0')
if before > cur then
  redis.call('HSET', key, field, before)
  cur = before
end
if redis.call('PTTL', key) < keep then
  redis.call('PEXPIRE', key, keep)
end
return cur
