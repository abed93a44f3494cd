-- Reads the entries of seqs from..to still in a conversation's timeline,
-- with the meta they are indexed by, in one consistent read (expiry may
-- raise the floor between two separate reads). Nothing is changed.
--
-- KEYS[1] conversation meta (hash)
-- KEYS[2] conversation timeline (list)
-- ARGV[1] first seq wanted
-- ARGV[2] last seq wanted
-- Returns {seq, first, epoch, entry...}; seq is '' when there is no meta.
local meta, tl = KEYS[1], KEYS[2]
local from_arg, to_arg = ARGV[1], ARGV[2]
local m = redis.call('HMGET', meta, 'seq', 'first', 'epoch')
local first = tonumber(m[2]) or 1
local out = {m[1] or '', string.format('%d', first), m[3] or ''}
local from = math.max(tonumber(from_arg), first)
local to = tonumber(to_arg)
if m[1] and to >= from then
  for _, e in ipairs(redis.call('LRANGE', tl, from - first, to - first)) do
    out[#out + 1] = e
  end
end
return out
