-- apply_inboxes.lua: apply merge batches of conversations' events to the
-- inboxes of many users in one call, each user's update one atomic step
-- (the call is one, so a reader never sees one half-applied). All keys of
-- a call share a hash slot: on a standalone server any users, on a
-- Redis Cluster the users of one slot (the caller groups them).
--
-- One update writes ONE user's inbox for ONE conversation. The guards
-- live beside the state they guard, so a replayed update changes nothing:
--   C:e  the epoch C:l, C:r and C:j count in: an update of an older epoch
--        is old, whatever its seqs; the first one of a newer epoch (the
--        timeline was rebuilt, its seqs above the rebuilt counter are new
--        messages) first takes back everything above its first seq: C:l,
--        C:r and C:j fall to it, the lane's references above it go;
--   C:l  last seq delivered: a delivery at or below it is old; a mention
--        at or below it is not (it may come after an update of higher
--        seqs): the lane is a set, ZADD NX of a mention it holds changes
--        nothing, and C:r (read) alone says a mention is done;
--   C:j  seq of the user's current join: an older join or leave is old;
--   C:t  the conversation's form: L while the user is in the large group,
--        so a leave applies once and a conversion once.
-- C:t is the one record of large-group membership (readers find a user's
-- large groups by it): it is written once, after every event, so that a
-- join and a leave in one update leave it as the last of them says.
-- Own messages mark the conversation read for their sender, so for small
-- conversations the unread count is C:l - C:r, which readers derive (no
-- field holds it: it was half of what a delivery wrote); like a read
-- receipt, a rise of C:r takes the conversation's mentions up to it out of
-- the lane.
--
-- The list's indexes change with what they index: mx holds the lane's
-- members again (scored 0, for per-conversation ranges) and the inbox
-- field :lg the conversations whose C:t is L. An inbox this script creates
-- starts with them complete (:ix = 1); an older one gets them from the
-- reader (list_index_build.lua), which relies on every write keeping them.
--
-- KEYS, 5 per update, in the order of the updates:
--   P{u:U}:ib  P{u:U}:cl  P{u:U}:mn  P{u:U}:prof  P{u:U}:mx
-- ARGV: the plans, then one plan number per update. The updates of a call
-- mostly carry the same conversation and events (every recipient but the
-- sender and those mentioned gets the same deliveries), so each distinct
-- (conversation, form, epoch, events) is sent and read once:
--   ARGV[1] np, the number of plans, then np plans, each:
--     conversation id
--     conversation form: d (direct), g (group), L (large group: unread and
--       order are derived at read time, only reads, mentions and
--       membership are written)
--     the epoch of the update's seqs (0: unknown, C:e is left as is)
--     n, the number of events, then n events, ascending seq, 3 fields
--     each: kind, seq, write ms
--       d  delivered (a message or notice from someone else; C:l - C:r
--          counts both, readers leave the notices out: see P{c:C}:ns)
--       m  delivered and mentions the user
--       o  the user's own message (marks read up to it)
--       j  the user joined at seq (sees nothing up to it)
--       x  the user left a large group at seq (its unread is frozen and it
--          is listed by the leave's write time)
--       c  the group became large: switch this member to the large form
--   then, per update in the order of KEYS, the number (from 1) of its plan
-- ARGV[last] verified run_ids (fence_lib.lua, prepended): on an instance
--   not verified against the changelog nothing runs (OBFENCED)
--
-- Returns one code per update: 1 if anything changed, 0 for a replay, -1
-- for a receive-only account (nothing written), -2 when the user's keys
-- were moved to the hot store (nothing written; see schemas/redis-keys.md),
-- or, for an update that failed, the error reply of the command that
-- failed (WRONGTYPE …) in its place.
--
-- Why it is written the way it is: this runs once per recipient of every
-- message batch, so what each update costs is what fanout costs. Per
-- update it makes three commands (read the inbox fields, write the ones
-- that changed, list the conversation); the profiles of a call are probed
-- with one EXISTS (they exist only for receive-only and moved accounts),
-- and each plan's numbers and field names are made once per call.

local STATUS_REPLAYED, STATUS_APPLIED, STATUS_RECEIVE_ONLY, STATUS_MOVED = 0, 1, -1, -2
local plan_count = tonumber(ARGV[1])
local refused = fence_refusal(ARGV[#ARGV])
if refused then return refused end

local call, tonumber, max, min, sub, find = redis.call, tonumber, math.max, math.min, string.sub, string.find

-- zremall takes the members ms out of the lane mn and its index mx.
local function zremall(mn, mx, ms)
  for i = 1, #ms, 500 do
    call('ZREM', mn, unpack(ms, i, min(i + 499, #ms)))
    call('ZREM', mx, unpack(ms, i, min(i + 499, #ms)))
  end
end

-- mention puts the mention of seq s, written at w, in the lane and its
-- index; it reports whether the lane did not hold it yet.
local function mention(mn, mx, conv, s, w)
  local m = conv .. ':' .. s
  call('ZADD', mx, 0, m)
  return call('ZADD', mn, 'NX', w, m) == 1
end

-- unmention drops the conversation's mentions of seqs in (from, to]: by
-- name when the range is shorter than the lane, else from the
-- conversation's range of mx (once indexed; before, by scanning the lane).
local function unmention(mn, mx, conv, indexed, from, to)
  local n = call('ZCARD', mn)
  if to <= from or n == 0 then return end
  local drop = {}
  if to - from <= n then
    for s = from + 1, to do drop[#drop + 1] = conv .. ':' .. s end
  else
    local pre = conv .. ':'
    local ms
    if indexed then
      ms = call('ZRANGEBYLEX', mx, '[' .. pre, '(' .. conv .. ';')
    else
      ms = call('ZRANGE', mn, 0, -1)
    end
    for _, m in ipairs(ms) do
      if sub(m, 1, #pre) == pre then
        local s = tonumber(sub(m, #pre + 1))
        if s and s > from and s <= to then drop[#drop + 1] = m end
      end
    end
  end
  zremall(mn, mx, drop)
end

-- read_plans reads the plans, each once: its numbers, its events (ev:
-- kind, seq, write ms, 3 entries an event, the seqs as numbers; the seqs
-- and write times as given stay in ARGV from o on, since a number a
-- command gets is formatted anew, which costs an update about as much as
-- a field does; the write times are only ever passed on), its first seq
-- and the inbox field names of its conversation. It returns them and
-- where the plan numbers of the updates start. The events are copied into
-- a table made at its size in one step: a table grown an element at a
-- time is reallocated at every power of two, and five of them per plan
-- cost a direct message's inbox call more than its commands.
local function read_plans()
  local plans, a = {}, 2
  local names = {} -- conversation → its field names: the plans of a call mostly share one
  for p = 1, plan_count do
    local conv, n = ARGV[a], tonumber(ARGV[a + 3])
    local nm = names[conv]
    if not nm then
      nm = {conv .. ':l', conv .. ':r', conv .. ':j', conv .. ':t', conv .. ':e'}
      names[conv] = nm
    end
    local ev, s0 = {unpack(ARGV, a + 4, a + 3 + 3 * n)}, nil
    for i = 2, 3 * n, 3 do
      ev[i] = tonumber(ev[i])
      -- A batch without a seq (a lone conversion) cannot tell an epoch's
      -- first seq.
      if s0 == nil and ev[i] > 0 then s0 = ev[i] end
    end
    plans[p] = {conv = conv, form = ARGV[a + 1], epoch_arg = ARGV[a + 2], epoch = tonumber(ARGV[a + 2]),
      n = n, ev = ev, o = a + 3, s0 = s0,
      fl = nm[1], fr = nm[2], fj = nm[3], ft = nm[4], fe = nm[5]}
    a = a + 4 + 3 * n
  end
  return plans, a
end

-- apply_one applies plan p to the user whose keys start at KEYS[kb]; it
-- returns its code. probe says whether the user may have a profile.
local function apply_one(kb, p, probe)
  local ib, cl, mn, prof, mx = KEYS[kb], KEYS[kb + 1], KEYS[kb + 2], KEYS[kb + 3], KEYS[kb + 4]
  if probe then
    local pf = call('HMGET', prof, 'ro', 'loc')
    if pf[2] == 'hot' then return STATUS_MOVED end
    if pf[1] == '1' then return STATUS_RECEIVE_ONLY end
  end

  local conv, form, epoch = p.conv, p.form, p.epoch
  local fl, fr, fj, ft, fe = p.fl, p.fr, p.fj, p.ft, p.fe
  local v = call('HMGET', ib, fl, fr, fj, ft, fe, ':ix')
  -- an inbox with the index mark exists: only one without may be new
  local indexed = v[6] == '1'
  local fresh = not indexed and call('EXISTS', ib, mn) == 0
  indexed = indexed or fresh
  local l0, r0, j0, t0, e0 = tonumber(v[1]) or 0, tonumber(v[2]) or 0, tonumber(v[3]) or 0, v[4], tonumber(v[5]) or 0
  if epoch > 0 and epoch < e0 then return STATUS_REPLAYED end
  local l, r, j, t = l0, r0, j0, t0
  local large = form == 'L'
  -- li: the event whose seq l is, for its text (nil: l is computed or as
  -- read); ai: the event whose write time lists the conversation (nil: it
  -- is not listed anew)
  local li, ai
  local changed = false
  local wrote = false -- whether the inbox was written before its fields' one HSET

  -- A newer epoch: what the user held above the batch's first seq was the
  -- old timeline's. A batch without a seq leaves the epoch to the next
  -- one. An inbox written before C:e existed adopts the epoch as it is.
  local s0 = p.s0
  local adopt = s0 ~= nil and epoch > e0
  local renewed = adopt and e0 > 0
  if renewed then
    local keep = s0 - 1
    l0, r0, j0 = min(l0, keep), min(r0, keep), min(j0, keep)
    l, r, j = l0, r0, j0
    unmention(mn, mx, conv, indexed, keep, 2 ^ 53)
  end

  local ev = p.ev
  local ments -- the mentions to write after the list: seq, write ms, seq, …
  for i = 1, p.n do
    local k, s, w = ev[3 * i - 2], ev[3 * i - 1], ev[3 * i]
    if k == 'd' then
      if not large and s > l then l, li, ai = s, i, i end
    elseif k == 'o' then
      if s > r then r = s end
      if not large and s > l then l, li, ai = s, i, i end
    elseif k == 'm' then
      if large then
        if s > j and s > r then
          ments = ments or {}
          ments[#ments + 1], ments[#ments + 2] = s, w
        end
      else
        if s > l then l, li, ai = s, i, i end
        -- Not guarded by C:l: an update of higher seqs may have come
        -- first (updates of one conversation can arrive out of order),
        -- and the lane is a set, so a replayed mention adds nothing.
        if s > r then
          ments = ments or {}
          ments[#ments + 1], ments[#ments + 2] = s, w
        end
      end
    elseif k == 'j' then
      if s > j then
        j = s
        if s > r then r = s end
        if large then
          t = 'L'
        elseif s > l then
          l, li, ai = s, i, i
        end
      end
    elseif k == 'x' then
      if s > j and t == 'L' then
        l, li = max(l, s - 1), nil
        t = 'g'
        call('HSET', ib, fl, l)
        changed, wrote = true, true
        -- listed from now on like a small group, so that the former member
        -- still finds (and can read) what was meant for them
        ai = i
      end
    elseif k == 'c' then
      t = 'L'
    end
  end

  -- The list, then the lane and its index, are written before the inbox's
  -- fields, which guard a replay (and the list before the lane, whose
  -- existence says the inbox is not new): an update that fails on a key
  -- of the wrong type fails before its guards move, and its replay
  -- applies it whole.
  if ai and tonumber(ARGV[p.o + 3 * ai]) > 0 then
    call('ZADD', cl, 'GT', ARGV[p.o + 3 * ai], conv)
  end
  local lv = li and ARGV[p.o + 3 * li - 1] or l
  if ments then
    for i = 1, #ments, 2 do
      if mention(mn, mx, conv, ments[i], ments[i + 1]) then changed = true end
    end
  end
  -- a lane this update found missing (fresh) holds only what it just added
  if r > r0 and (ments or not fresh) then unmention(mn, mx, conv, indexed, r0, r) end
  -- The inbox's fields are written in one HSET, last (f: field, value, …).
  local f = {}
  if renewed or l ~= l0 or r ~= r0 or j ~= j0 then
    changed = true
    if large then
      f = {fr, r, fj, j}
      if renewed then f[5], f[6] = fl, lv end
    else
      t = form
      if not renewed and r == r0 and j == j0 and v[2] and v[3] then
        -- a delivery: C:r and C:j hold these values already
        f = {fl, lv}
      else
        f = {fl, lv, fr, r, fj, j}
      end
    end
  end
  if t ~= t0 then
    f[#f + 1], f[#f + 2] = ft, t
    changed = true
    if t == 'L' or t0 == 'L' then
      -- :lg is "\nC1\nC2\n": the user's large groups
      local lg, item = call('HGET', ib, ':lg') or '\n', '\n' .. conv .. '\n'
      local at = find(lg, item, 1, true)
      if t == 'L' and not at then
        f[#f + 1], f[#f + 2] = ':lg', lg .. conv .. '\n'
      elseif t ~= 'L' and at then
        lg = sub(lg, 1, at) .. sub(lg, at + #item)
        if lg == '\n' then call('HDEL', ib, ':lg') else f[#f + 1], f[#f + 2] = ':lg', lg end
      end
    end
  end
  if adopt then
    -- Only a renewal changes what the user sees; an inbox taking its first
    -- epoch (a replay included) does not.
    f[#f + 1], f[#f + 2] = fe, p.epoch_arg
  end
  -- an inbox this update creates starts with its list indexes complete
  if fresh and (wrote or #f > 0) then f[#f + 1], f[#f + 2] = ':ix', 1 end
  if #f > 0 then call('HSET', ib, unpack(f)) end
  if changed then return STATUS_APPLIED end
  return STATUS_REPLAYED
end

local plans, first = read_plans()
-- A profile exists only for a receive-only or moved account: when none of
-- the call's users has one, none is read.
local profs, probe = {}, false
for kb = 4, #KEYS, 5 do profs[#profs + 1] = KEYS[kb] end
for i = 1, #profs, 500 do
  if call('EXISTS', unpack(profs, i, min(i + 499, #profs))) > 0 then probe = true end
end
-- One update that fails (a key of the wrong type, say) fails alone: its
-- place in the reply is the error, and the call goes on with the next
-- user. A key of the wrong type fails before the update's guards moved
-- (see apply_one), so its replay, once the key is repaired, applies it
-- whole. Errors raised by Lua itself get the ERR code a server gives
-- them.
local pcall, type, match = pcall, type, string.match
local out = {}
for kb = 1, #KEYS, 5 do
  local u = (kb - 1) / 5
  local ok, res = pcall(apply_one, kb, plans[tonumber(ARGV[first + u])], probe)
  if not ok then
    if type(res) == 'table' then res = res.err end
    res = tostring(res)
    if not match(res, '^%u+ ') then res = 'ERR ' .. res end
    res = {err = res}
  end
  out[u + 1] = res
end
return out
