-- dedupe_lib.lua: the dedupe buckets of one conversation-day, shared by the
-- scripts that read or fill them. It is prepended to sequence.lua and
-- dedupe_restore.lua (see dedupe.go) and does nothing on its own.
--
-- A day's ids are keyed by an 8-byte digest of the client_msg_id (computed
-- by the caller), spread over n buckets by linear hashing: bucket 0 is
-- P{c:C}:dd:DAY, bucket b > 0 is P{c:C}:dd:DAY:b. Bucket 0 also holds the
-- fields 'n' (buckets; absent: 1), 'c' (digests held) and 'x' ('1' once
-- P{c:C}:dd:DAY:x exists: the full ids whose digest the day already held
-- for another id). Buckets are split one at a time, in order, while the day
-- holds more than DD_LOAD digests per bucket, so that every bucket stays far
-- below hash-max-listpack-entries (128) and keeps Redis's compact listpack
-- encoding. Every key of a day expires at the same instant.
--
-- Every key is one the caller named in KEYS (Redis Cluster routes by them):
-- the caller reads each day's n and c first and names the buckets the
-- digests fall in, those the splits the batch may cause touch, and the
-- exact map. dd_missing checks that before anything is written; a day that
-- changed in between makes the script refuse (OBDEDUPE) with nothing done,
-- and the caller reads again.

local DD_LOAD = 32
local DD_MAX_BUCKETS = 65536

-- dd_day reads the state of the day whose bucket 0 is key. had says
-- whether bucket 0 existed: every write of a day's keys (dd_save) makes
-- them expire at the day's one instant and writes n and c, so a bucket 0
-- that holds them already expires when it should.
-- With digs, the same command reads what bucket 0 holds for them: pre[i]
-- is digs[i]'s seq there as stored, or false (meaningful only while the
-- day has one bucket).
local function dd_day(key, digs)
  local v
  if digs then
    v = redis.call('HMGET', key, 'n', 'c', 'x', unpack(digs))
  else
    v = redis.call('HMGET', key, 'n', 'c', 'x')
  end
  local pre = nil
  if digs then pre = {select(4, unpack(v))} end
  return {key = key, n = tonumber(v[1]) or 1, c = tonumber(v[2]) or 0, x = v[3] == '1',
    had = (v[1] or v[2]) ~= false, dirty = false, touched = {}, keys = {}, xkey = nil, pre = pre}
end

-- dd_days_in reads the days whose bucket 0 (P{c:C}:dd:DAY) are
-- KEYS[first .. last], in that order, with the days' other keys (bucket b:
-- P{c:C}:dd:DAY:b, the exact map P{c:C}:dd:DAY:x) among KEYS[from .. to].
-- The first day's read takes digs along (dd_day), when given.
local function dd_days_in(first, last, from, to, digs)
  local days, by = {}, {}
  for i = first, last do
    local d
    if i == first then d = dd_day(KEYS[i], digs) else d = dd_day(KEYS[i]) end
    days[#days + 1] = d
    by[KEYS[i]] = d
  end
  for i = from, to do
    local base, b = string.match(KEYS[i], '^(.*:dd:%d+):(%w+)$')
    local d = base and by[base]
    if d and b == 'x' then
      d.xkey = KEYS[i]
    elseif d and tonumber(b) then
      d.keys[tonumber(b)] = KEYS[i]
    end
  end
  return days
end

-- dd_hash takes 24 bits of a digest: enough to address DD_MAX_BUCKETS.
local function dd_hash(dig)
  local a, b, c = string.byte(dig, 1, 3)
  return a * 65536 + b * 256 + c
end

-- dd_low is the largest power of two not above n.
local function dd_low(n)
  local lo = 1
  while lo * 2 <= n do lo = lo * 2 end
  return lo
end

-- dd_addr is the bucket of a hash among n buckets: the buckets below
-- n - lo were split this round and are addressed with one more bit.
local function dd_addr(h, n)
  local lo = dd_low(n)
  local b = h % (lo * 2)
  if b >= n then b = h % lo end
  return b
end

local function dd_bucket(day, b)
  if b == 0 then return day.key end
  -- dd_missing ran first: a bucket not given cannot be asked for
  return day.keys[b] or error('dedupe bucket ' .. b .. ' of ' .. day.key .. ' is not in KEYS')
end

local function dd_exact(day)
  return day.xkey or error('the exact map of ' .. day.key .. ' is not in KEYS')
end

-- dd_missing names a key of the day that looking up digs and, when adds,
-- adding them (with every split that may follow) could touch and that is
-- not in KEYS; nil when all are there. It reads the day as it is now, so
-- it is the check of the caller's earlier read.
local function dd_missing(day, digs, adds)
  -- the common case, a day only looked up that was never split: every
  -- digest is in bucket 0
  if not adds and day.n == 1 then
    if day.x and not day.xkey then return day.key .. ':x' end
    return nil
  end
  local top = day.n
  if adds then
    while day.c + #digs > DD_LOAD * top and top < DD_MAX_BUCKETS do top = top + 1 end
  end
  local function has(b) return b == 0 or day.keys[b] ~= nil end
  for n = day.n, top do
    for _, dig in ipairs(digs) do
      local b = dd_addr(dd_hash(dig), n)
      if not has(b) then return day.key .. ':' .. b end
    end
    if n < top and not (has(n - dd_low(n)) and has(n)) then return day.key .. ':' .. n end
  end
  if (adds or day.x) and not day.xkey then return day.key .. ':x' end
  return nil
end

-- dd_find returns the seq the day holds for a digest, or nil.
local function dd_find(day, dig)
  -- a day that holds no digest (most days of a quiet conversation) has
  -- nothing to look up
  if day.c == 0 then return nil end
  local v = redis.call('HGET', dd_bucket(day, dd_addr(dd_hash(dig), day.n)), dig)
  if v then return tonumber(v) end
  return nil
end

-- dd_split splits bucket n - lo into itself and the new bucket n.
local function dd_split(day)
  local n = day.n
  local lo = dd_low(n)
  local src, dst = dd_bucket(day, n - lo), dd_bucket(day, n)
  local all = redis.call('HGETALL', src)
  local moved, fields = {}, {}
  for i = 1, #all, 2 do
    local f = all[i]
    -- bucket 0's own fields ('n', 'c', 'x') are not digests
    if #f == 8 and dd_hash(f) % (lo * 2) == n then
      moved[#moved + 1] = f
      moved[#moved + 1] = all[i + 1]
      fields[#fields + 1] = f
    end
  end
  if #fields > 0 then
    redis.call('HSET', dst, unpack(moved))
    redis.call('HDEL', src, unpack(fields))
    day.touched[dst] = true
  end
  day.n, day.dirty = n + 1, true
end

-- dd_add stores digest -> seq unless the day holds the digest already; it
-- returns nil when stored, else the seq held.
local function dd_add(day, dig, seq)
  local key = dd_bucket(day, dd_addr(dd_hash(dig), day.n))
  if redis.call('HSETNX', key, dig, seq) == 0 then
    return tonumber(redis.call('HGET', key, dig))
  end
  day.touched[key] = true
  day.c, day.dirty = day.c + 1, true
  while day.c > DD_LOAD * day.n and day.n < DD_MAX_BUCKETS do dd_split(day) end
  return nil
end

-- dd_add_exact stores the full id of a record whose digest the day holds
-- for another id; it returns 1 when stored, 0 when the id was there.
local function dd_add_exact(day, cmid, seq)
  local key = dd_exact(day)
  day.touched[key] = true
  if not day.x then day.x, day.dirty = true, true end
  return redis.call('HSETNX', key, cmid, seq)
end

-- dd_find_exact returns the seq of a full id the day holds, or nil.
local function dd_find_exact(day, cmid)
  if not day.x then return nil end
  local v = redis.call('HGET', dd_exact(day), cmid)
  if v then return tonumber(v) end
  return nil
end

-- dd_save writes the day's counters back and makes every key it wrote
-- expire at `at` (unix seconds), but for a bucket 0 that existed, which
-- does already (see dd_day): the other keys may have been emptied by a
-- split and written again, so they are set every time.
local function dd_save(day, at)
  if day.dirty then
    if day.x then
      redis.call('HSET', day.key, 'n', day.n, 'c', day.c, 'x', '1')
    else
      redis.call('HSET', day.key, 'n', day.n, 'c', day.c)
    end
    day.touched[day.key] = true
  end
  for k in pairs(day.touched) do
    if k ~= day.key or not day.had then redis.call('EXPIREAT', k, at) end
  end
end
