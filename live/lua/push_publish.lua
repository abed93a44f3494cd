-- push_publish.lua: publishes a batch on a conversation's live channel
-- only while the conversation is what the push stage last read of it
-- (large or not, the same membership version). The check and the publish
-- are one step and one round trip; when it changed nothing is published,
-- and the stage reads the conversation again and resolves whom the batch
-- is for.
--
-- KEYS[1]  P{c:C}:meta
-- ARGV[1]  the channel, P live:{c:C} (not a key; in the conversation's slot)
-- ARGV[2]  membership version the caller read
-- ARGV[3]  1 when the caller read the conversation as a large group, else 0
-- ARGV[4]  1 to publish sharded (SPUBLISH), else PUBLISH
-- ARGV[5]  the batch
-- Returns STATUS_PUBLISHED, or STATUS_CHANGED having published nothing.

local meta = KEYS[1]
local channel, version, large, sharded, batch = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1', ARGV[4] == '1', ARGV[5]
local STATUS_PUBLISHED, STATUS_CHANGED = 1, 0

local m = redis.call('HMGET', meta, 'large', 'mver')
if (tonumber(m[2]) or 0) ~= version or ((tonumber(m[1]) or 0) == 1) ~= large then
  return STATUS_CHANGED
end
if sharded then
  redis.call('SPUBLISH', channel, batch)
else
  redis.call('PUBLISH', channel, batch)
end
return STATUS_PUBLISHED
