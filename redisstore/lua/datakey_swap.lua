-- datakey_swap.lua: replace a conversation's wrapped data key by the same
-- key wrapped anew (rekey), only if it is still the one that was read:
-- a key is never replaced by a stale copy.
--
-- KEYS[1]  P{c:C}:dk
-- ARGV[1]  the wrapped key that was read   ARGV[2] the new wrapping
--
-- Returns 1 replaced, 0 the stored key differs (nothing changed).
local dk = KEYS[1]
local old, new = ARGV[1], ARGV[2]
if redis.call('GET', dk) ~= old then return 0 end
redis.call('SET', dk, new)
return 1
