-- Removes from a user's @mention lane the references past the window of
-- their conversation's type, examining a bounded number per call.
--
-- Members are "CONV:SEQ" scored by write time in ms. The conversation's type
-- comes from the user's inbox (field "CONV:t": d, g or L); a reference whose
-- type is unknown is kept by the longer of the two windows.
--
-- KEYS[1] the user's mention lane (zset)
-- KEYS[2] the user's inbox (hash)
-- KEYS[3] the user's mention index (zset: the lane's members again); a
--         reference leaves both
-- ARGV[1] cutoff in ms for direct conversations
-- ARGV[2] cutoff in ms for groups (small and large)
-- ARGV[3] most members examined by this call
-- ARGV[4] offset: members below the cutoff examined earlier and kept
-- Returns {removed, examined}.
local mn, ib, mx = KEYS[1], KEYS[2], KEYS[3]
local most, offset = ARGV[3], ARGV[4]
local cd = tonumber(ARGV[1])
local cg = tonumber(ARGV[2])
local latest = math.max(cd, cg)
local earliest = math.min(cd, cg)
local cand = redis.call('ZRANGEBYSCORE', mn, '-inf', '(' .. string.format('%d', latest),
  'WITHSCORES', 'LIMIT', tonumber(offset), tonumber(most))
local removed = 0
for i = 1, #cand, 2 do
  local member = cand[i]
  local score = tonumber(cand[i + 1])
  local cut = earliest
  local conv = string.match(member, '^(.*):%d+$')
  if conv then
    local t = redis.call('HGET', ib, conv .. ':t')
    if t == 'd' then
      cut = cd
    elseif t == 'g' or t == 'L' then
      cut = cg
    end
  end
  if score < cut then
    removed = removed + redis.call('ZREM', mn, member)
    redis.call('ZREM', mx, member)
  end
end
return {removed, #cand / 2}
