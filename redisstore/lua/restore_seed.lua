-- restore_seed.lua: recreate the head of a conversation whose meta
-- vanished, from its first record in im.sequenced: the changelog's epoch,
-- and a timeline that starts at that record's seq. Nothing is written when
-- the meta exists (fence_lib.lua prepended: refuses on an instance not
-- verified).
--
-- KEYS[1]  P{c:C}:meta
-- ARGV[1]  epoch   ARGV[2] first seq   ARGV[3] conv type (d|g)
-- ARGV[last] verified run_ids (fence_lib.lua)
--
-- Returns 1 when the head was created, 0 when the meta exists.

local meta = KEYS[1]
local epoch, first, ctype = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local refused = fence_refusal(ARGV[#ARGV])
if refused then return refused end

if redis.call('EXISTS', meta) == 1 then return 0 end
redis.call('HSET', meta, 'seq', first - 1, 'epoch', epoch, 'first', first, 'type', ctype,
  'nmem', 0, 'mver', 0)
return 1
