-- mark_large.lua: note that every member's inbox of a large group was
-- switched to the large form, after those inbox writes (fence_lib.lua
-- prepended: refuses on an instance not verified, where the inbox writes
-- it vouches for may be lost).
--
-- KEYS[1]  P{c:C}:meta
-- ARGV[last] verified run_ids (fence_lib.lua)

local meta = KEYS[1]
local refused = fence_refusal(ARGV[#ARGV])
if refused then return refused end

redis.call('HSET', meta, 'lgc', 1)
return 1
