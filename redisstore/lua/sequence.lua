-- sequence.lua: give up to a merge batch of records of ONE conversation
-- their seqs, in order, in one atomic step: dedupe by client_msg_id, seq
-- allocation, timeline append and membership changes happen together, so a
-- seq never exists without its body and a replay changes nothing.
--
-- Dedupe: an id is looked up by its digest in the dedupe buckets of every
-- day of the window (dedupe_lib.lua, prepended). A digest found names a
-- seq; it is the record's own only if the entry at that seq starts with the
-- same client_msg_id (Go encodes it first, packed or as given, see
-- entryBody; the record's own body shows which): otherwise two
-- ids share the digest, and the newer one is kept in full in the day's
-- exact map. An entry below the floor has expired: the record is an old
-- replay (the dedupe window outlives the timeline's).
--
-- Authority: a group's member set is also its access list. The first
-- record of a group is a join naming its founders, the sender among them,
-- or a message, whose sender is then the only founder: either way the
-- sender becomes the owner. After that only members send; only
-- the owner and admins add or remove others (an admin removes plain
-- members only); anyone leaves by themselves; only the owner gives or takes
-- the admin role, or hands ownership over. A record of system authority (a
-- trusted group service) skips these checks; its founding record's first
-- recipient is the owner. A refused record is rejected: it gets no seq and
-- changes nothing. Roles live in P{c:C}:role (o owner, a admin; absent:
-- member). An owner who leaves hands over to an admin, else to the earliest
-- member. A leave keeps the span the user was a member for in
-- P{c:C}:past, so a former member still reads what was meant for them.
--
-- Held: a conversation a restore could not put back exactly (P{c:C}:held
-- exists) is refused whole, OBHELD, nothing changed: its counter may be
-- below seqs the changelog already gave, and only a rebuild (a new epoch)
-- makes handing out seqs safe again.
--
-- KEYS[1]  P{c:C}:meta   KEYS[2] P{c:C}:tl   KEYS[3] P{c:C}:mem
-- KEYS[4]  P{c:C}:ma     KEYS[5] P{c:C}:role   KEYS[6] P{c:C}:past
-- KEYS[7]  P{c:C}:held   (any value: held)
-- KEYS[8 .. 7+F] P{c:C}:dd:DAY (bucket 0) of today (new ids go there) and
--          of the window's older days the caller read as holding ids, newest
--          first
-- KEYS[8+F .. 7+F+E] bucket 0 of the window's other days, which the caller
--          read as empty: one EXISTS shows they still are (a day that is
--          not is read like the others)
-- then the F days' other keys the batch may touch (dedupe_lib.lua);
--          OBDEDUPE, nothing changed, when one is missing
-- KEYS[#KEYS-3] P{c:C}:rcp  KEYS[#KEYS-2] P{c:C}:rcd  KEYS[#KEYS-1] P{c:C}:rcr
--          the receipt cursors
--          (zsets: member -> seq): a leave takes the member out of them
-- KEYS[#KEYS] P{c:C}:ns   the seqs of the group's join and leave notices
--          (no unread counts them; see the notices block below)
-- ARGV[1]  write time, ms (the worker's clock; never Redis TIME)
-- ARGV[2]  large-group threshold (members)
-- ARGV[3]  expire-at of today's dedupe keys, unix seconds
-- ARGV[4]  n records      ARGV[5] p probe users
-- ARGV[6 .. 5+p]          probe user ids (their member seq is returned)
-- then 11 fields per record: client_msg_id, its dedupe digest (8 bytes),
--          conv type (d|g), kind (m message | j join | l leave),
--          mention_all (1|0), sender, users (newline-separated: the direct
--          peer, or who joins/leaves), preview text, the entry body,
--          role a join gives ('' none | m member | a admin | o owner),
--          authority (u the sender | s system)
-- then, only when bodies are sealed: the epoch they were sealed for and,
--          per record, the seq its body was sealed for ('' = not sealed).
--          A record that would get another seq (or epoch) stops the batch
--          before it: a nonce never seals two bodies (package seal).
-- then n tags, one per record ('' = none): a new record's tag becomes the
--          conversation's `tag` (retention policies select by it)
-- ARGV[last - 3] F   ARGV[last - 2] E   (the days of KEYS above)
-- ARGV[last - 1] 'EPOCH:MVER' of the member list the caller holds ('' none):
--          when the conversation is at that epoch and mver after the batch,
--          the members are answered '=' instead of the hash
-- ARGV[last] verified run_ids (fence_lib.lua, prepended): on an instance
--          not verified against the changelog nothing runs (OBFENCED)
--
-- Returns { epoch, large_from_seq, large_converted (0|1), nmem,
--           per record {status, seq, data}..., members (flat, only while
--           the group is not large; '=' when the caller's list is current),
--           probe member seqs ('' = not a member), counter, mver }
-- status 0 new, 1 duplicate (data = stored entry, '' if expired),
--        2 rejected (data = "field|reason", nothing changed),
--        3 not sequenced: an earlier record stopped the batch (sealed only).
-- The counter and mver are the conversation's after the batch.

local REFUSAL_DEDUPE = 'OBDEDUPE'
local REFUSAL_HELD = 'OBHELD'
local STATUS_NEW, STATUS_DUPLICATE, STATUS_REJECTED, STATUS_NOT_DONE = 0, 1, 2, 3
local dd_expire_at = ARGV[3]
local meta, tl, mem, ma, role, past, held = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local wt = ARGV[1]
local threshold = tonumber(ARGV[2])
local n, p = tonumber(ARGV[4]), tonumber(ARGV[5])
local base = 5 + p
local tags = #ARGV - 4 - n -- the n tags come last but for the days, the member list and the fence
local known_members = ARGV[#ARGV - 1]
local nfull, nempty = tonumber(ARGV[#ARGV - 3]), tonumber(ARGV[#ARGV - 2])
local refused = fence_refusal(ARGV[#ARGV])
if refused then return refused end
-- The days' other keys (buckets, exact maps) start here and end before
-- the receipt sets.
local extras = 8 + nfull + nempty
-- The hold, the days read as empty and the days' other keys in one
-- command: in the common case none exists, and none is looked at again.
-- The others, when one does, are type-checked below (othersExist).
local othersExist = false
do
  local probe = {held}
  for i = 8 + nfull, #KEYS - 4 do probe[#probe + 1] = KEYS[i] end
  if redis.call('EXISTS', unpack(probe)) > 0 then
    if redis.call('EXISTS', held) == 1 then
      return redis.error_reply(REFUSAL_HELD .. ' ' .. held .. ' is set: a restore could not put the conversation back; rebuild it')
    end
    -- a day filled since the caller read it (a restore of its ids): read
    -- like the others, dd_missing checks the keys it needs
    if nempty > 0 and redis.call('EXISTS', unpack(KEYS, 8 + nfull, extras - 1)) > 0 then
      nfull, nempty = nfull + nempty, 0
    end
    othersExist = extras <= #KEYS - 4 and redis.call('EXISTS', unpack(KEYS, extras, #KEYS - 4)) > 0
  end
end

local m = redis.call('HMGET', meta, 'seq', 'epoch', 'first', 'type', 'nmem', 'lgs', 'lgc', 'mver')
local seq, epoch, first = tonumber(m[1]) or 0, m[2], tonumber(m[3]) or 1
local ctype, nmem, lgs = m[4], tonumber(m[5]) or 0, tonumber(m[6]) or 0
local mver = tonumber(m[8]) or 0
local seq0, lgs0 = seq, lgs
local created = false
if not epoch then
  epoch, first, created = wt, 1, true
end
-- pastSpans bounds the spans kept per former member (the oldest go first).
local pastSpans = 16

local none = {}
local function split(s)
  -- most records name one user (a direct message's peer) or none (a
  -- group message)
  if s == '' then return none end
  if not string.find(s, '\n', 1, true) then return {s} end
  local out = {}
  for u in string.gmatch(s, '[^\n]+') do out[#out + 1] = u end
  return out
end

-- the batch's digests, which today's read takes along (dd_day)
local digs = {}
for i = 0, n - 1 do digs[i + 1] = ARGV[base + i * 11 + 2] end
local days = dd_days_in(8, 7 + nfull, extras, #KEYS - 4, digs)

-- A direct conversation's members (two, set by its first message and
-- never changed after) are read once, for the checks, the probes and the
-- answer.
local dmem = nil
local function readDirect()
  dmem = {}
  local all = redis.call('HGETALL', mem)
  for i = 1, #all, 2 do dmem[all[i]] = all[i + 1] end
end
if ctype == 'd' and nmem > 0 then readDirect() end

-- A script is not a transaction: what it wrote before an error stays. The
-- writes below come in an order no partial run may keep (the timeline
-- appended and the dedupe entries added record by record, the meta's seq
-- last), so that a run failing halfway would leave a dedupe entry naming
-- a seq the next record takes: one seq, two messages. Hence every key is
-- checked first, before anything is written: once past this check no
-- command below can fail on what the keys hold (WRONGTYPE is the only
-- failure the data can cause; a server refuses a script for memory only
-- before its first write, and never kills one that wrote). A key of the
-- wrong type fails the call whole with nothing changed, and it fails
-- every call alike until the key is repaired, so the caller gives the
-- records up for good (Permanent) without a write to undo.
--
-- The meta and each dedupe day's bucket 0 were read above, before any
-- write, by commands that fail on a key of the wrong type, and so was a
-- direct conversation's member hash: they need no check of their own.
-- Of the others, only the keys the batch's records can write or read are
-- checked: a message writes the timeline (and the @all seqs when it
-- mentions all); the member hash, roles, past spans and notices change
-- only with a join, a leave or the first record of a conversation.
--
-- The timeline needs no check of its own on the fast path (below): there
-- its RPUSH is the call's first write, and it fails on a key of the wrong
-- type with nothing written yet.
local fast = false
do
  local changes, mentions = seq == 0 or nmem == 0, false
  local direct = ctype == 'd' or created
  for i = 0, n - 1 do
    local a = base + i * 11
    if ARGV[a + 4] ~= 'm' then changes = true end
    if ARGV[a + 5] == '1' then mentions = true end
    if ARGV[a + 3] ~= 'd' then direct = false end
  end
  -- The fast path: messages alone, which change no member but a direct
  -- conversation's first (its two members, set once: founds), and
  -- today's day one bucket that no add splits and that holds none of the
  -- batch's digests, none of them twice in the batch. Then every record's
  -- fate is known from reads, and its writes wait until all are known:
  -- one RPUSH of the new entries first, one HSET of their digests and the
  -- day's count, instead of two commands a record.
  local founds = direct and nmem == 0
  for i = 0, n - 1 do
    if ARGV[base + i * 11 + 4] ~= 'm' then founds = false end
  end
  local today = days[1]
  fast = (not changes or founds) and today.n == 1 and today.c + n <= DD_LOAD
  if fast then
    local seen = {}
    for i = 1, n do
      if today.pre[i] or seen[digs[i]] then fast = false; break end
      seen[digs[i]] = true
    end
  end
  local want = {}
  if not fast then want[tl] = 'list' end
  if fast and founds then
    -- the one key a direct conversation's first messages write besides
    want[mem] = 'hash'
  elseif changes then
    want[mem], want[role], want[past], want[KEYS[#KEYS]] = 'hash', 'hash', 'hash', 'zset'
  elseif ctype ~= 'd' then
    -- a group's checks read the member hash and the roles
    want[mem], want[role] = 'hash', 'hash'
  end
  if mentions then want[ma] = 'zset' end
  -- The days' other keys (buckets, exact maps) are hashes; most do not
  -- exist, which the first EXISTS showed for all of them.
  if othersExist then
    for i = extras, #KEYS - 4 do want[KEYS[i]] = 'hash' end
  end
  -- The receipt sets are only ever ZREMed here, by redis.pcall: a set of
  -- the wrong type fails that command alone, so it needs no TYPE check.
  for k, w in pairs(want) do
    local t = redis.call('TYPE', k).ok
    if t ~= 'none' and t ~= w then
      return redis.error_reply('WRONGTYPE ' .. k .. ' holds a ' .. t .. ', not a ' .. w .. ': nothing sequenced')
    end
  end
end

do
  for i, d in ipairs(days) do
    local miss = dd_missing(d, digs, i == 1)
    if miss then return redis.error_reply(REFUSAL_DEDUPE .. ' ' .. miss .. ' is not in KEYS: the day changed since it was read') end
  end
end

-- idField is the protobuf field 1 (client_msg_id) an entry body starts
-- with when its id is not packed; ids are at most 128 bytes, so the
-- length takes one or two bytes. Entries written before ids were packed
-- all start with it.
local function idField(cmid)
  local n = #cmid
  if n < 128 then return '\10' .. string.char(n) .. cmid end
  return '\10' .. string.char(n % 128 + 128, math.floor(n / 128)) .. cmid
end

-- leadField is the field an entry body starts with: its id, as given or
-- packed (Go decides, see appendEntryID), so the record's own body says
-- what its stored entry starts with. Tag and length are varints.
local function leadField(body)
  local i = 1
  while (string.byte(body, i) or 0) >= 128 do i = i + 1 end
  i = i + 1
  local len, scale = 0, 1
  while true do
    local b = string.byte(body, i)
    if not b then return body end
    i = i + 1
    len = len + (b % 128) * scale
    if b < 128 then break end
    scale = scale * 128
  end
  return string.sub(body, 1, i - 1 + len)
end

-- holds reports whether the entry "SEQ:WRITE_MS:" .. body is of the id.
local function holds(e, field)
  local a = string.find(e, ':', 1, true)
  local b = a and string.find(e, ':', a + 1, true)
  return b ~= nil and string.sub(e, b + 1, b + #field) == field
end

-- isOwn reports whether seq s, which a day holds for the record's digest,
-- is the record's: its entry starts with the record's id (body is the
-- record's entry body), or it expired.
local function isOwn(s, cmid, body)
  if s < first then return true end
  local e = redis.call('LINDEX', tl, s - first)
  return not e or holds(e, leadField(body)) or holds(e, idField(cmid))
end

-- lookup returns the seq a record's id already has in day d, or nil. An
-- id is held by one day at most, so the days are looked up one by one.
local function lookup(d, cmid, dig, body)
  local s = dd_find(d, dig)
  if s and isOwn(s, cmid, body) then return s end
  return dd_find_exact(d, cmid)
end

-- roleOf is a user's role: 'o', 'a', 'm' (a member), or nil (not one),
-- read once per user while the members and roles stay as they are (a
-- batch of messages changes neither; members() forgets them).
local roles = {}
local function roleOf(u)
  local r = roles[u]
  if r == nil then
    r = false
    if redis.call('HEXISTS', mem, u) == 1 then r = redis.call('HGET', role, u) or 'm' end
    roles[u] = r
  end
  return r or nil
end

local function has(list, x)
  for _, v in ipairs(list) do
    if v == x then return true end
  end
  return false
end

-- refuseGroup returns why the sender may not send a group record, or nil.
local function refuseGroup(kind, sender, users, rl, auth)
  if seq == 0 then
    if kind == 'm' and auth ~= 's' then return nil end
    if kind ~= 'j' then
      return 'kind|a group begins with a member_join naming its founders, or a message founding it alone'
    end
    if auth ~= 's' and not has(users, sender) then
      return 'recipients|the founders of a group include its sender, who owns it'
    end
    if rl ~= '' then return "role|a group's founders are its owner and members" end
    return nil
  end
  if auth == 's' then return nil end
  local sr = roleOf(sender)
  if not sr then return 'sender|is not a member of the group' end
  if kind == 'm' then return nil end
  if kind == 'l' then
    if #users == 1 and users[1] == sender then return nil end
    if sr == 'm' then return 'sender|only the owner or an admin removes others' end
    for _, u in ipairs(users) do
      local ur = roleOf(u)
      if u ~= sender and sr ~= 'o' and ur and ur ~= 'm' then
        return 'recipients|' .. u .. ' is the owner or an admin: only the owner removes them'
      end
    end
    return nil
  end
  if sr == 'm' then return 'sender|only the owner or an admin adds members' end
  if rl == '' then return nil end
  if sr ~= 'o' and rl ~= 'm' then return 'role|only the owner gives the admin or owner role' end
  for _, u in ipairs(users) do
    local ur = roleOf(u)
    if ur == 'o' and rl ~= 'o' then
      return 'recipients|' .. u .. ' owns the group: ownership moves by giving the owner role to another member'
    end
    if ur == 'a' and sr ~= 'o' then
      return 'recipients|' .. u .. ' is an admin: only the owner changes their role'
    end
  end
  return nil
end

-- reject returns a reason, or nil when the record may be sequenced.
local function reject(typ, kind, sender, users, rl, auth)
  if seq == 0 and created then ctype = typ end
  if typ ~= ctype then
    return 'conv_type|is ' .. typ .. ' but the conversation is ' .. ctype
  end
  if typ == 'd' then
    if nmem > 0 and not dmem then readDirect() end
    if nmem > 0 and (not dmem[sender] or not dmem[users[1]]) then
      return 'sender|direct conversation already has two other participants'
    end
    return nil
  end
  return refuseGroup(kind, sender, users, rl, auth)
end

-- setOwner makes u the owner; a previous owner becomes an admin.
local function setOwner(u)
  local all = redis.call('HGETALL', role)
  for i = 1, #all, 2 do
    if all[i + 1] == 'o' and all[i] ~= u then redis.call('HSET', role, all[i], 'a') end
  end
  redis.call('HSET', role, u, 'o')
end

-- handOver gives a group whose owner left a new owner: the admin of the
-- lowest id, else the member who joined first (the lowest id on a tie).
local function handOver()
  local best = nil
  local all = redis.call('HGETALL', role)
  for i = 1, #all, 2 do
    if all[i + 1] == 'a' and (not best or all[i] < best) then best = all[i] end
  end
  if not best then
    local bj = nil
    local ms = redis.call('HGETALL', mem)
    for i = 1, #ms, 2 do
      local j = tonumber(ms[i + 1])
      if not bj or j < bj or (j == bj and ms[i] < best) then best, bj = ms[i], j end
    end
  end
  if best then redis.call('HSET', role, best, 'o') end
end

-- keepSpan records that u was a member from after seq j to before seq s.
local function keepSpan(u, j, s)
  local spans = {}
  local v = redis.call('HGET', past, u)
  if v then
    for sp in string.gmatch(v, '[^,]+') do spans[#spans + 1] = sp end
  end
  spans[#spans + 1] = j .. '-' .. s
  local from = math.max(1, #spans - pastSpans + 1)
  redis.call('HSET', past, u, table.concat(spans, ',', from, #spans))
end

-- members applies a record's membership change; it reports whether the
-- member set changed.
local function members(kind, s, users, sender, rl, auth)
  local before = nmem
  if kind ~= 'm' or s == 1 or nmem == 0 then roles, dmem = {}, nil end
  if kind == 'm' and ctype == 'd' and nmem == 0 then
    redis.call('HSET', mem, sender, 0, users[1], 0)
    readDirect()
    nmem = 0
    for _ in pairs(dmem) do nmem = nmem + 1 end
  elseif kind == 'm' and s == 1 then
    -- a group founded by a message: its sender alone, as the owner
    redis.call('HSET', mem, sender, 0)
    setOwner(sender)
    nmem = 1
  elseif kind == 'j' then
    -- the very first record of a group names its founders: they see it
    local at = s
    if s == 1 then at = 0 end
    for _, u in ipairs(users) do
      if redis.call('HSETNX', mem, u, at) == 1 then nmem = nmem + 1 end
      if rl == 'a' then
        redis.call('HSET', role, u, 'a')
      elseif rl == 'm' then
        redis.call('HDEL', role, u)
      end
    end
    if rl == 'o' then setOwner(users[1]) end
    if s == 1 then
      if auth == 's' then setOwner(users[1]) else setOwner(sender) end
    end
    if lgs == 0 and nmem > threshold then lgs = s end
  elseif kind == 'l' then
    local owner = false
    for _, u in ipairs(users) do
      local j = redis.call('HGET', mem, u)
      if j then
        redis.call('HDEL', mem, u)
        -- in the same step, so "N of M" never counts a member who left
        redis.pcall('ZREM', KEYS[#KEYS - 3], u)
        redis.pcall('ZREM', KEYS[#KEYS - 2], u)
        redis.pcall('ZREM', KEYS[#KEYS - 1], u)
        nmem = nmem - 1
        keepSpan(u, j, s)
        if redis.call('HGET', role, u) == 'o' then owner = true end
        redis.call('HDEL', role, u)
      end
    end
    if owner then handOver() end
  end
  return nmem ~= before
end

-- the sealing arguments, when given, lie between the records and the tags
local sealEpoch = nil
if tags > base + n * 11 then sealEpoch = ARGV[base + n * 11 + 1] end
local function mispredicted(i)
  if not sealEpoch or sealEpoch == '' then return false end
  local want = ARGV[base + n * 11 + 2 + i]
  if want == '' then return false end
  return tostring(epoch) ~= sealEpoch or tonumber(want) ~= seq + 1
end

-- The answer: its head (epoch, large_from_seq, large_converted, nmem) is
-- set once the batch is done, each record's status, seq and data follow.
local res = {0, 0, 0, 0}
local function outcome(st, sq, data)
  res[#res + 1] = st; res[#res + 1] = sq; res[#res + 1] = data
end
local newest = nil -- where the arguments of the batch's last new message start
local stopped = false
-- duplicate answers a record whose id has seq s already.
local function duplicate(s)
  -- below first, the entry expired (and a negative index would count
  -- from the tail)
  local e = false
  if s >= first then e = redis.call('LINDEX', tl, s - first) end
  outcome(STATUS_DUPLICATE, s, e or '')
end

-- Today's day is looked up by adding to it: HSETNX stores the digest for
-- the next seq unless the day holds it, in one command where a lookup and
-- an add took two. A record refused (or stopping the batch) is looked up
-- there first, since a resend is a duplicate before anything else. On the
-- fast path today's read answered already: a record neither found in an
-- older day nor refused is new, and its writes are gathered for after the
-- loop (pushed: its entry; added: its digest and seq; alls: its @all seq).
local tag = nil -- the conversation's tag after the batch: the last new record's that has one
local pushed, added, alls = {}, {}, {}
local founders = nil -- a direct conversation's members its first message makes, on the fast path
for i = 0, n - 1 do
  local a = base + i * 11
  local cmid, dig, typ, kind, all = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5]
  local sender, users = ARGV[a + 6], split(ARGV[a + 7])
  local rl, auth, body = ARGV[a + 10], ARGV[a + 11], ARGV[a + 9]
  local dup = nil
  if not stopped then
    for k = 2, #days do dup = dup or lookup(days[k], cmid, dig, body) end
  end
  if stopped then
    outcome(STATUS_NOT_DONE, seq, '')
  elseif dup then
    duplicate(dup)
  else
    local why = reject(typ, kind, sender, users, rl, auth)
    if why or mispredicted(i) then
      dup = lookup(days[1], cmid, dig, body)
      if dup then
        duplicate(dup)
      elseif why then
        outcome(STATUS_REJECTED, 0, why)
      else
        stopped = true
        outcome(STATUS_NOT_DONE, seq, '')
      end
    elseif fast then
      seq = seq + 1
      if nmem == 0 then
        -- as members() would have it: the two members, answered as read
        founders = {sender, 0, users[1], 0}
        dmem = {[sender] = '0', [users[1]] = '0'}
        for _ in pairs(dmem) do nmem = nmem + 1 end
        mver = mver + 1
      end
      pushed[#pushed + 1] = seq .. ':' .. wt .. ':' .. body
      added[#added + 1] = dig; added[#added + 1] = seq
      if all == '1' and lgs > 0 and seq >= lgs then alls[#alls + 1] = wt; alls[#alls + 1] = seq end
      newest = a
      if ARGV[tags + i + 1] ~= '' then tag = ARGV[tags + i + 1] end
      outcome(STATUS_NEW, seq, '')
    else
      -- nil: stored for seq + 1; else the seq the day holds the digest for
      local held = dd_add(days[1], dig, seq + 1)
      if held then
        if isOwn(held, cmid, body) then dup = held else dup = dd_find_exact(days[1], cmid) end
      end
      if dup then
        duplicate(dup)
      else
        seq = seq + 1
        redis.call('RPUSH', tl, seq .. ':' .. wt .. ':' .. body)
        -- two ids sharing the digest: this one is kept in full
        if held then dd_add_exact(days[1], cmid, seq) end
        if members(kind, seq, users, sender, rl, auth) then mver = mver + 1 end
        if all == '1' and lgs > 0 and seq >= lgs then
          redis.call('ZADD', ma, wt, seq)
        end
        -- Notices: a join or leave takes a seq but is no one's unread; a
        -- large group's derived unread subtracts the notices it spans.
        if kind ~= 'm' then
          redis.call('ZADD', KEYS[#KEYS], seq, seq)
        end
        if kind == 'm' then newest = a end
        if ARGV[tags + i + 1] ~= '' then tag = ARGV[tags + i + 1] end
        outcome(STATUS_NEW, seq, '')
      end
    end
  end
end

-- The fast path's writes: the timeline first, so that a timeline of the
-- wrong type fails the call before anything changed; after it nothing can
-- fail (today's bucket 0 and the meta were read, the @all seqs and a new
-- direct conversation's member hash checked).
if #pushed > 0 then
  -- its error names the key, as a TYPE check's does; any other (a server
  -- refusing the first write for memory) is answered as it came
  local r = redis.pcall('RPUSH', tl, unpack(pushed))
  if type(r) == 'table' and r.err then
    if string.sub(r.err, 1, 9) ~= 'WRONGTYPE' then return r end
    return redis.error_reply('WRONGTYPE ' .. tl .. ' is not a list: nothing sequenced')
  end
  local today = days[1]
  added[#added + 1] = 'n'; added[#added + 1] = today.n
  added[#added + 1] = 'c'; added[#added + 1] = today.c + #pushed
  redis.call('HSET', today.key, unpack(added))
  if not today.had then redis.call('EXPIREAT', today.key, dd_expire_at) end
  if #alls > 0 then redis.call('ZADD', ma, unpack(alls)) end
  if founders then redis.call('HSET', mem, unpack(founders)) end
end

-- A conversation is created by its first sequenced record: one whose
-- records were all refused is not created at all.
if seq ~= seq0 then
  -- one HSET for all the meta's fields
  local f = {'seq', seq, 'epoch', epoch, 'first', first, 'type', ctype, 'nmem', nmem, 'mver', mver}
  local function put(k, v) f[#f + 1] = k; f[#f + 1] = v end
  if lgs ~= lgs0 then put('lgs', lgs); put('large', 1) end
  if newest then put('lsender', ARGV[newest + 6]); put('lts', wt); put('lprev', ARGV[newest + 8]) end
  if tag then put('tag', tag) end
  redis.call('HSET', meta, unpack(f))
end
dd_save(days[1], dd_expire_at)

res[1], res[2], res[3], res[4] = tonumber(epoch), lgs, tonumber(m[7]) or 0, nmem
local known_epoch, known_mver = string.match(known_members, '^(%d+):(%d+)$')
if lgs ~= 0 then
  res[#res + 1] = {}
elseif known_epoch and tonumber(known_epoch) == tonumber(epoch) and tonumber(known_mver) == mver then
  res[#res + 1] = '='
elseif dmem then
  local flat = {}
  for u, j in pairs(dmem) do flat[#flat + 1] = u; flat[#flat + 1] = j end
  res[#res + 1] = flat
else
  res[#res + 1] = redis.call('HGETALL', mem)
end
local probes = {}
for i = 1, p do
  if dmem then
    probes[i] = dmem[ARGV[5 + i]] or ''
  else
    probes[i] = redis.call('HGET', mem, ARGV[5 + i]) or ''
  end
end
res[#res + 1] = probes
res[#res + 1] = seq
res[#res + 1] = mver
return res
