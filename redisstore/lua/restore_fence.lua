-- restore_fence.lua: raise the "applied up to" fence of im.sequenced on
-- this server: for each partition, the offset below which every record's
-- effects were acknowledged by this instance. Written after the records'
-- effects and their produce, before the offset commit; the AOF keeps a
-- prefix of the writes, so a fence that survives a crash implies the
-- effects before it survived too. Only raises: writers of one partition
-- may finish out of order (fence_lib.lua prepended: refuses on an
-- instance not verified).
--
-- KEYS[1]  P{fence:N}:applied   hash: partition → next offset
-- ARGV[1..2n] partition, offset pairs
-- ARGV[last]  verified run_ids (fence_lib.lua)

local applied = KEYS[1]
local refused = fence_refusal(ARGV[#ARGV])
if refused then return refused end

local raised = 0
for i = 1, #ARGV - 1, 2 do
  local p, off = ARGV[i], tonumber(ARGV[i + 1])
  local cur = tonumber(redis.call('HGET', applied, p)) or -1
  if off > cur then
    redis.call('HSET', applied, p, off)
    raised = raised + 1
  end
end
return raised
