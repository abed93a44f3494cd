-- Puts a rebuilt conversation in place in one step: the staged timeline
-- (and, when the history could tell it, the staged member set) replace the
-- live ones, and the meta takes the rebuilt counter, floor and epoch.
--
-- The rebuild was planned on the meta as it was read before staging; if
-- anything sequenced since (the counter or the epoch moved), nothing is
-- changed: a rebuild never overwrites what was written after its plan. A
-- staged timeline that lost entries (its expiry lapsed) is refused too.
--
-- KEYS[1] meta   KEYS[2] timeline   KEYS[3] staged timeline
-- KEYS[4] members   KEYS[5] staged members   KEYS[6] @all references
-- KEYS[7] roles     KEYS[8] staged roles
-- KEYS[9] former members   KEYS[10] staged former members
-- KEYS[11] notice seqs (zset, score = seq)
-- ARGV[1] meta seq as read ('' when there was no meta)
-- ARGV[2] meta epoch as read ('' when there was no meta)
-- ARGV[3] seq   ARGV[4] first   ARGV[5] epoch   ARGV[6] type (d|g)
-- ARGV[7] number of staged timeline entries
-- ARGV[8] '1': replace the members, roles and former members, and set
--         nmem, mver, lgs from ARGV[9..11]
-- ARGV[9] nmem   ARGV[10] mver   ARGV[11] lgs (0: not large)
-- ARGV[12] lsender   ARGV[13] lts ('' : leave the summary as it is)
-- ARGV[14] lprev
-- ARGV[15] the restored join and leave seqs, comma-separated
-- ARGV[16..] @all references: pairs of write time, seq
-- Returns 1 when done, 0 when the meta moved, -1 when staging is short.
local m = redis.call('HMGET', KEYS[1], 'seq', 'epoch')
if (m[1] or '') ~= ARGV[1] or (m[2] or '') ~= ARGV[2] then
  return 0
end
local n = tonumber(ARGV[7])
if redis.call('LLEN', KEYS[3]) ~= n then
  return -1
end
if n > 0 then
  redis.call('RENAME', KEYS[3], KEYS[2])
  redis.call('PERSIST', KEYS[2])
else
  redis.call('DEL', KEYS[2])
end
redis.call('HSET', KEYS[1], 'seq', ARGV[3], 'first', ARGV[4], 'epoch', ARGV[5], 'type', ARGV[6])
-- replace puts a staged hash in place of the live one (none staged: the
-- replay found it empty).
local function replace(live, staged)
  if redis.call('EXISTS', staged) == 1 then
    redis.call('RENAME', staged, live)
    redis.call('PERSIST', live)
  else
    redis.call('DEL', live)
  end
end
if ARGV[8] == '1' then
  replace(KEYS[4], KEYS[5])
  replace(KEYS[7], KEYS[8])
  replace(KEYS[9], KEYS[10])
  redis.call('HSET', KEYS[1], 'nmem', ARGV[9], 'mver', ARGV[10])
  if ARGV[11] ~= '0' then
    redis.call('HSET', KEYS[1], 'lgs', ARGV[11], 'large', 1)
  end
end
if ARGV[13] ~= '' then
  redis.call('HSET', KEYS[1], 'lsender', ARGV[12], 'lts', ARGV[13], 'lprev', ARGV[14])
end
redis.call('DEL', KEYS[6])
redis.call('DEL', KEYS[11])
local ns = {}
for s in string.gmatch(ARGV[15], '%d+') do
  ns[#ns + 1] = s
  ns[#ns + 1] = s
  if #ns >= 1000 then
    redis.call('ZADD', KEYS[11], unpack(ns))
    ns = {}
  end
end
if #ns > 0 then redis.call('ZADD', KEYS[11], unpack(ns)) end
for i = 16, #ARGV, 2 do
  redis.call('ZADD', KEYS[6], ARGV[i], ARGV[i + 1])
end
return 1
