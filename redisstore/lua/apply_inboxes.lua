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
--   C:l  last seq delivered: a delivery or mention at or below it is old;
--   C:j  seq of the user's current join: an older join or leave is old;
--   C:t  the conversation's form: L while the user is in the large group,
--        so a leave applies once and a conversion once.
-- C:t is the one record of large-group membership (readers find a user's
-- large groups by it): it is written once, after every event, so that a
-- join and a leave in one update leave it as the last of them says.
-- Own messages mark the conversation read for their sender, so for small
-- conversations C:u = C:l - C:r always holds; like a read receipt, a rise
-- of C:r takes the conversation's mentions up to it out of the lane.
--
-- The list's indexes change with what they index: mx holds the lane's
-- members again (scored 0, for per-conversation ranges) and the inbox
-- field :lg the conversations whose C:t is L. An inbox this script creates
-- starts with them complete (:ix = 1); an older one gets them from the
-- reader (list_index_build.lua), which relies on every write keeping them.
--
-- KEYS, 5 per update, in the order of the updates:
--   P{u:U}:ib  P{u:U}:cl  P{u:U}:mn  P{u:U}:prof  P{u:U}:mx
-- ARGV, per update, in the same order:
--   conversation id
--   conversation form: d (direct), g (group), L (large group: unread and
--     order are derived at read time, only reads, mentions and
--     membership are written)
--   the epoch of the update's seqs (0: unknown, C:e is left as is)
--   n, the number of events, then n events, ascending seq, 3 fields each:
--   kind, seq, write ms
--     d  delivered (a message or notice from someone else; C:u counts
--        both, readers leave the notices out: see P{c:C}:ns)
--     m  delivered and mentions the user
--     o  the user's own message (marks read up to it)
--     j  the user joined at seq (sees nothing up to it)
--     x  the user left a large group at seq (its unread is frozen and it
--        is listed by the leave's write time)
--     c  the group became large: switch this member to the large form
-- ARGV[last] verified run_ids (fence_lib.lua, prepended): on an instance
--   not verified against the changelog nothing runs (OBFENCED)
--
-- Returns one code per update: 1 if anything changed, 0 for a replay, -1
-- for a receive-only account (nothing written), -2 when the user's keys
-- were moved to the hot store (nothing written; see schemas/redis-keys.md).

local STATUS_REPLAYED, STATUS_APPLIED, STATUS_RECEIVE_ONLY, STATUS_MOVED = 0, 1, -1, -2
local refused = fence_refusal(ARGV[#ARGV])
if refused then return refused end

-- apply_one applies the update whose keys start at KEYS[kb] and whose
-- arguments start at ARGV[a]; it returns its code.
local function apply_one(kb, a)
  local ib, cl, mn, prof, mx = KEYS[kb], KEYS[kb + 1], KEYS[kb + 2], KEYS[kb + 3], KEYS[kb + 4]
  local conv, form, epoch = ARGV[a], ARGV[a + 1], tonumber(ARGV[a + 2])
  local first_event, last_event = a + 4, a + 3 + 3 * tonumber(ARGV[a + 3])
  local pf = redis.call('HMGET', prof, 'ro', 'loc')
  if pf[2] == 'hot' then return STATUS_MOVED end
  if pf[1] == '1' then return STATUS_RECEIVE_ONLY end

  local fl, fr, fj, fu, ft, fe = conv .. ':l', conv .. ':r', conv .. ':j', conv .. ':u', conv .. ':t', conv .. ':e'
  local v = redis.call('HMGET', ib, fl, fr, fj, ft, fe, ':ix')
  -- an inbox with the index mark exists: only one without may be new
  local indexed = v[6] == '1'
  local fresh = not indexed and redis.call('EXISTS', ib, mn) == 0
  indexed = indexed or fresh
  local l0, r0, j0, t0, e0 = tonumber(v[1]) or 0, tonumber(v[2]) or 0, tonumber(v[3]) or 0, v[4], tonumber(v[5]) or 0
  if epoch > 0 and epoch < e0 then return STATUS_REPLAYED end
  local l, r, j, t = l0, r0, j0, t0
  local large = form == 'L'
  local active = 0
  local changed = false

  local function mention(s, w)
    if s > r then
      if redis.call('ZADD', mn, w, conv .. ':' .. s) == 1 then changed = true end
      redis.call('ZADD', mx, 0, conv .. ':' .. s)
    end
  end

  local function zremall(ms)
    for i = 1, #ms, 500 do
      redis.call('ZREM', mn, unpack(ms, i, math.min(i + 499, #ms)))
      redis.call('ZREM', mx, unpack(ms, i, math.min(i + 499, #ms)))
    end
  end

  -- unmention drops the conversation's mentions of seqs in (from, to]: by
  -- name when the range is shorter than the lane, else from the
  -- conversation's range of mx (once indexed; before, by scanning the lane).
  local function unmention(from, to)
    local n = redis.call('ZCARD', mn)
    if to <= from or n == 0 then return end
    local drop = {}
    if to - from <= n then
      for s = from + 1, to do drop[#drop + 1] = conv .. ':' .. s end
    else
      local pre = conv .. ':'
      local ms
      if indexed then
        ms = redis.call('ZRANGEBYLEX', mx, '[' .. pre, '(' .. conv .. ';')
      else
        ms = redis.call('ZRANGE', mn, 0, -1)
      end
      for _, m in ipairs(ms) do
        if string.sub(m, 1, #pre) == pre then
          local s = tonumber(string.sub(m, #pre + 1))
          if s and s > from and s <= to then drop[#drop + 1] = m end
        end
      end
    end
    zremall(drop)
  end

  -- A newer epoch: what the user held above the batch's first seq was the
  -- old timeline's. A batch without a seq (a lone conversion) cannot tell,
  -- and leaves the epoch to the next one. An inbox written before C:e
  -- existed adopts the epoch as it is.
  local s0
  for i = first_event, last_event, 3 do
    local s = tonumber(ARGV[i + 1])
    if s > 0 then
      s0 = s
      break
    end
  end
  local adopt = s0 ~= nil and epoch > e0
  local renewed = adopt and e0 > 0
  if renewed then
    local keep = s0 - 1
    l0, r0, j0 = math.min(l0, keep), math.min(r0, keep), math.min(j0, keep)
    l, r, j = l0, r0, j0
    unmention(keep, 2 ^ 53)
  end

  for i = first_event, last_event, 3 do
    local k, s, w = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
    if k == 'o' then
      if s > r then r = s end
      if not large and s > l then l, active = s, w end
    elseif k == 'd' then
      if not large and s > l then l, active = s, w end
    elseif k == 'm' then
      if large then
        if s > j then mention(s, w) end
      elseif s > l then
        l, active = s, w
        mention(s, w)
      end
    elseif k == 'j' then
      if s > j then
        j = s
        if s > r then r = s end
        if large then
          t = 'L'
        elseif s > l then
          l, active = s, w
        end
      end
    elseif k == 'x' then
      if s > j and t == 'L' then
        l = math.max(l, s - 1)
        t = 'g'
        redis.call('HSET', ib, fl, l, fu, math.max(0, l - r))
        changed = true
        -- listed from now on like a small group, so that the former member
        -- still finds (and can read) what was meant for them
        active = w
      end
    elseif k == 'c' then
      t = 'L'
    end
  end

  if r > r0 then unmention(r0, r) end
  if renewed or l ~= l0 or r ~= r0 or j ~= j0 then
    changed = true
    if large then
      redis.call('HSET', ib, fr, r, fj, j)
      if renewed then redis.call('HSET', ib, fl, l, fu, math.max(0, l - r)) end
    else
      t = form
      redis.call('HSET', ib, fl, l, fr, r, fj, j, fu, math.max(0, l - r))
    end
  end
  if t ~= t0 then
    redis.call('HSET', ib, ft, t)
    changed = true
    if t == 'L' or t0 == 'L' then
      -- :lg is "\nC1\nC2\n": the user's large groups
      local v, item = redis.call('HGET', ib, ':lg') or '\n', '\n' .. conv .. '\n'
      local at = string.find(v, item, 1, true)
      if t == 'L' and not at then
        redis.call('HSET', ib, ':lg', v .. conv .. '\n')
      elseif t ~= 'L' and at then
        v = string.sub(v, 1, at) .. string.sub(v, at + #item)
        if v == '\n' then redis.call('HDEL', ib, ':lg') else redis.call('HSET', ib, ':lg', v) end
      end
    end
  end
  if adopt then
    -- Only a renewal changes what the user sees; an inbox taking its first
    -- epoch (a replay included) does not.
    redis.call('HSET', ib, fe, ARGV[a + 2])
  end
  if fresh and redis.call('EXISTS', ib) == 1 then redis.call('HSET', ib, ':ix', 1) end
  if active > 0 then
    redis.call('ZADD', cl, 'GT', active, conv)
  end
  if changed then return STATUS_APPLIED end
  return STATUS_REPLAYED
end

local out = {}
local a = 1
for kb = 1, #KEYS, 5 do
  out[#out + 1] = apply_one(kb, a)
  a = a + 4 + 3 * tonumber(ARGV[a + 3])
end
return out
