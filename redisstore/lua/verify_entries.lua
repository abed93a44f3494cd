-- Reads the entries of seqs from..to still in a conversation's timeline,
-- with the meta they are indexed by, in one consistent read (expiry may
-- raise the floor between two separate reads). Nothing is changed.
--
-- KEYS[1] conversation meta (hash)
-- KEYS[2] conversation timeline (list)
-- ARGV[1] first seq wanted
-- ARGV[2] last seq wanted
-- Returns {seq, first, epoch, entry...}; seq is '' when there is no meta.
local m = redis.call('HMGET', KEYS[1], 'seq', 'first', 'epoch')
local first = tonumber(m[2]) or 1
local out = {m[1] or '', string.format('%d', first), m[3] or ''}
local from = math.max(tonumber(ARGV[1]), first)
local to = tonumber(ARGV[2])
if m[1] and to >= from then
  for _, e in ipairs(redis.call('LRANGE', KEYS[2], from - first, to - first)) do
    out[#out + 1] = e
  end
end
return out
