-- sequence.lua: give up to a merge batch of records of ONE conversation
-- their seqs, in order, in one atomic step: dedupe by client_msg_id, seq
-- allocation, timeline append and membership changes happen together, so a
-- seq never exists without its body and a replay changes nothing.
--
-- Dedupe: an id is looked up by its digest in the dedupe buckets of every
-- day of the window (dedupe_lib.lua, prepended). A digest found names a
-- seq; it is the record's own only if the entry at that seq starts with the
-- same client_msg_id (Go encodes it first, see entryBody): otherwise two
-- ids share the digest, and the newer one is kept in full in the day's
-- exact map. An entry below the floor has expired: the record is an old
-- replay (the dedupe window outlives the timeline's).
--
-- KEYS[1]  P{c:C}:meta   KEYS[2] P{c:C}:tl   KEYS[3] P{c:C}:mem
-- KEYS[4]  P{c:C}:ma     KEYS[5..] P{c:C}:dd:DAY (bucket 0), today first,
--          then the older days of the dedupe window (new ids go to today);
--          a day's other buckets are named after its bucket 0
-- ARGV[1]  write time, ms (the worker's clock; never Redis TIME)
-- ARGV[2]  large-group threshold (members)
-- ARGV[3]  expire-at of today's dedupe keys, unix seconds
-- ARGV[4]  n records      ARGV[5] p probe users
-- ARGV[6 .. 5+p]          probe user ids (their member seq is returned)
-- then 9 fields per record: client_msg_id, its dedupe digest (8 bytes),
--          conv type (d|g), kind (m message | j join | l leave),
--          mention_all (1|0), sender, users (newline-separated: the direct
--          peer, or who joins/leaves), preview text, the entry body
--
-- Returns { epoch, large_from_seq, large_converted (0|1), nmem,
--           per record {status, seq, data}..., members (flat, only while
--           the group is not large), probe member seqs ('' = not a member) }
-- status 0 new, 1 duplicate (data = stored entry, '' if expired),
--        2 rejected (data = "field|reason", nothing changed).

local meta, tl, mem, ma = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local wt = ARGV[1]
local threshold = tonumber(ARGV[2])
local n, p = tonumber(ARGV[4]), tonumber(ARGV[5])
local base = 5 + p

local m = redis.call('HMGET', meta, 'seq', 'epoch', 'first', 'type', 'nmem', 'lgs', 'lgc', 'mver')
local seq, epoch, first = tonumber(m[1]) or 0, m[2], tonumber(m[3]) or 1
local ctype, nmem, lgs = m[4], tonumber(m[5]) or 0, tonumber(m[6]) or 0
local mver = tonumber(m[8]) or 0
local seq0, lgs0 = seq, lgs
local created = false
if not epoch then
  epoch, first, ctype, created = wt, 1, ARGV[base + 3], true
end

local function split(s)
  local out = {}
  for u in string.gmatch(s, '[^\n]+') do out[#out + 1] = u end
  return out
end

local days = {}
for i = 5, #KEYS do days[#days + 1] = dd_day(KEYS[i]) end

-- idField is the protobuf field 1 (client_msg_id) an entry body starts
-- with; ids are at most 128 bytes, so the length takes one or two bytes.
local function idField(cmid)
  local n = #cmid
  if n < 128 then return '\10' .. string.char(n) .. cmid end
  return '\10' .. string.char(n % 128 + 128, math.floor(n / 128)) .. cmid
end

-- holds reports whether the entry "SEQ:WRITE_MS:" .. body is of the id.
local function holds(e, field)
  local a = string.find(e, ':', 1, true)
  local b = a and string.find(e, ':', a + 1, true)
  return b ~= nil and string.sub(e, b + 1, b + #field) == field
end

-- lookup returns the seq a record's id already has, or nil.
local function lookup(cmid, dig)
  local field = idField(cmid)
  for _, d in ipairs(days) do
    local s = dd_find(d, dig)
    if s then
      if s < first then return s end
      local e = redis.call('LINDEX', tl, s - first)
      if not e or holds(e, field) then return s end
    end
  end
  for _, d in ipairs(days) do
    local s = dd_find_exact(d, cmid)
    if s then return s end
  end
  return nil
end

-- reject returns a reason, or nil when the record may be sequenced.
local function reject(typ, kind, sender, users)
  if typ ~= ctype then
    return 'conv_type|is ' .. typ .. ' but the conversation is ' .. ctype
  end
  if typ == 'd' and nmem > 0 then
    if not redis.call('HGET', mem, sender) or not redis.call('HGET', mem, users[1]) then
      return 'sender|direct conversation already has two other participants'
    end
  end
  return nil
end

-- members applies a record's membership change; it reports whether the
-- member set changed.
local function members(kind, s, users, sender)
  local before = nmem
  if kind == 'm' and ctype == 'd' and nmem == 0 then
    redis.call('HSET', mem, sender, 0, users[1], 0)
    nmem = redis.call('HLEN', mem)
  elseif kind == 'j' then
    -- the very first record of a group names its founders: they see it
    local at = s
    if s == 1 then at = 0 end
    for _, u in ipairs(users) do
      if redis.call('HSETNX', mem, u, at) == 1 then nmem = nmem + 1 end
    end
    if lgs == 0 and nmem > threshold then lgs = s end
  elseif kind == 'l' then
    for _, u in ipairs(users) do
      nmem = nmem - redis.call('HDEL', mem, u)
    end
  end
  return nmem ~= before
end

local out = {}
local newest = nil
for i = 0, n - 1 do
  local a = base + i * 9
  local cmid, dig, typ, kind, all = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5]
  local sender, users = ARGV[a + 6], split(ARGV[a + 7])
  local dup = lookup(cmid, dig)
  if dup then
    -- below first, the entry expired (and a negative index would count
    -- from the tail)
    local e = false
    if dup >= first then e = redis.call('LINDEX', tl, dup - first) end
    out[#out + 1] = {1, dup, e or ''}
  else
    local why = reject(typ, kind, sender, users)
    if why then
      out[#out + 1] = {2, 0, why}
    else
      seq = seq + 1
      redis.call('RPUSH', tl, seq .. ':' .. wt .. ':' .. ARGV[a + 9])
      if dd_add(days[1], dig, seq) then dd_add_exact(days[1], cmid, seq) end
      if members(kind, seq, users, sender) then mver = mver + 1 end
      if all == '1' and lgs > 0 and seq >= lgs then
        redis.call('ZADD', ma, wt, seq)
      end
      if kind == 'm' then newest = {sender, ARGV[a + 8]} end
      out[#out + 1] = {0, seq, ''}
    end
  end
end

if seq ~= seq0 or created then
  redis.call('HSET', meta, 'seq', seq, 'epoch', epoch, 'first', first, 'type', ctype,
    'nmem', nmem, 'mver', mver)
  if lgs ~= lgs0 then redis.call('HSET', meta, 'lgs', lgs, 'large', 1) end
  if newest then redis.call('HSET', meta, 'lsender', newest[1], 'lts', wt, 'lprev', newest[2]) end
end
dd_save(days[1], ARGV[3])

local res = {tonumber(epoch), lgs, tonumber(m[7]) or 0, nmem}
for _, r in ipairs(out) do
  res[#res + 1] = r[1]; res[#res + 1] = r[2]; res[#res + 1] = r[3]
end
if lgs == 0 then
  res[#res + 1] = redis.call('HGETALL', mem)
else
  res[#res + 1] = {}
end
local probes = {}
for i = 1, p do probes[i] = redis.call('HGET', mem, ARGV[5 + i]) or '' end
res[#res + 1] = probes
return res
