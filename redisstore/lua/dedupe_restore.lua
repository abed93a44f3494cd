-- dedupe_restore.lua: puts client_msg_ids of rebuilt records back in the
-- dedupe buckets of their days (dedupe_lib.lua, prepended), as sequencing
-- would have left them: by digest, or in full in the day's exact map when
-- the day holds the digest for another seq. Ids already there change
-- nothing, so a repeated restore is harmless.
--
-- KEYS[1..k] P{c:C}:dd:DAY (bucket 0) of each day restored, then the
--            days' other keys the ids may touch (dedupe_lib.lua); OBDEDUPE,
--            nothing changed, when one is missing
-- ARGV[1]    k
-- ARGV[2 .. k+1] expire-at of each day's keys, unix seconds
-- then 4 fields per id: day (index into KEYS), digest (8 bytes),
--            client_msg_id, seq
-- Returns how many ids were added.
local REFUSAL_DEDUPE = 'OBDEDUPE'
local k = tonumber(ARGV[1])
local days = dd_days_in(1, k, k + 1, #KEYS)
local digs = {}
for i = 1, k do digs[i] = {} end
for a = k + 2, #ARGV, 4 do
  local list = digs[tonumber(ARGV[a])]
  list[#list + 1] = ARGV[a + 1]
end
for i = 1, k do
  local miss = dd_missing(days[i], digs[i], true)
  if miss then return redis.error_reply(REFUSAL_DEDUPE .. ' ' .. miss .. ' is not in KEYS: the day changed since it was read') end
end
local added = 0
for a = k + 2, #ARGV, 4 do
  local d, seq = days[tonumber(ARGV[a])], tonumber(ARGV[a + 3])
  local held = dd_add(d, ARGV[a + 1], seq)
  if not held then
    added = added + 1
  elseif held ~= seq then
    added = added + dd_add_exact(d, ARGV[a + 2], seq)
  end
end
for i = 1, k do dd_save(days[i], ARGV[1 + i]) end
return added
