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
-- KEYS[12] the hold a restore left (deleted: the rebuilt conversation,
--          in its new epoch, may be sequenced again; a hold set after the
--          rebuild read the meta is a race: the plan kept its epoch)
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
-- ARGV[16] '1' when the rebuild read the conversation held, else '0'
-- ARGV[17..] @all references: pairs of write time, seq
-- Returns 1 when done, 0 when the meta moved or a hold appeared, -1 when staging is short.
local STATUS_DONE, STATUS_RACED, STATUS_SHORTENED = 1, 0, -1
local meta, tl, staged_tl, mem = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local staged_mem, ma, role, staged_role = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local past, staged_past, notices, held = KEYS[9], KEYS[10], KEYS[11], KEYS[12]
local seq_read, epoch_read, seq, first = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local epoch, ctype, staged_n, with_members = ARGV[5], ARGV[6], ARGV[7], ARGV[8]
local nmem, mver, lgs, lsender = ARGV[9], ARGV[10], ARGV[11], ARGV[12]
local lts, lprev, notice_seqs, held_read = ARGV[13], ARGV[14], ARGV[15], ARGV[16]
local m = redis.call('HMGET', meta, 'seq', 'epoch')
if (m[1] or '') ~= seq_read or (m[2] or '') ~= epoch_read then
  return STATUS_RACED
end
if held_read ~= '1' and redis.call('EXISTS', held) == 1 then
  return STATUS_RACED
end
local n = tonumber(staged_n)
if redis.call('LLEN', staged_tl) ~= n then
  return STATUS_SHORTENED
end
if n > 0 then
  redis.call('RENAME', staged_tl, tl)
  redis.call('PERSIST', tl)
else
  redis.call('DEL', tl)
end
redis.call('HSET', meta, 'seq', seq, 'first', first, 'epoch', epoch, 'type', ctype)
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
if with_members == '1' then
  replace(mem, staged_mem)
  replace(role, staged_role)
  replace(past, staged_past)
  redis.call('HSET', meta, 'nmem', nmem, 'mver', mver)
  if lgs ~= '0' then
    redis.call('HSET', meta, 'lgs', lgs, 'large', 1)
  end
end
if lts ~= '' then
  redis.call('HSET', meta, 'lsender', lsender, 'lts', lts, 'lprev', lprev)
end
redis.call('DEL', ma)
redis.call('DEL', notices)
local ns = {}
for s in string.gmatch(notice_seqs, '%d+') do
  ns[#ns + 1] = s
  ns[#ns + 1] = s
  if #ns >= 1000 then
    redis.call('ZADD', notices, unpack(ns))
    ns = {}
  end
end
if #ns > 0 then redis.call('ZADD', notices, unpack(ns)) end
for i = 17, #ARGV, 2 do
  redis.call('ZADD', ma, ARGV[i], ARGV[i + 1])
end
redis.call('DEL', held)
return STATUS_DONE
