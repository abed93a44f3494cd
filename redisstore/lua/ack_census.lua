-- Counts one user for the device census: how many devices they have,
-- whether any of them acked (pulled) since the idle cutoff, and how far
-- apart the devices' cursors are. Reads only; one user's slot.
--
-- Drift: per conversation that any device holds a cursor of, the highest
-- cursor minus the lowest, among cursors of the newest epoch held (a
-- device without one counts as 0: it holds nothing of the conversation as
-- far as the server knows), summed over the conversations. Users with one
-- device have no drift.
--
-- KEYS[1] the user's devices (zset: device -> last use ms)
-- KEYS[2] the user's inbox index (hash; its existence makes a user)
-- KEYS[3] the user's profile (hash; loc = hot: the keys moved away)
-- KEYS[4 .. 3+k] the cursors of the devices ARGV names, in that order
-- ARGV[1] k: how many devices follow (the caller's read of the device set;
--         a device registered since is counted but its cursor is not read)
-- ARGV[2] idle cutoff in ms: a last use before it is idle
-- ARGV[3 .. 2+k] device ids
-- Backlog: per conversation of the inbox index (large groups aside: their
-- inbox fields are not kept), its last seq C:l minus what the user holds
-- of it, the highest of the seq they joined at (C:j) and their devices'
-- cursors of its epoch (C:e): messages in the inbox no device acked. An
-- index of more than max_fields fields is not read (-1): the census stays
-- a short script per user.
-- Returns {counted (0: no inbox, or moved), devices, idle (0|1), drift,
-- backlog (-1: not measured)}.
local devices, ib, prof = KEYS[1], KEYS[2], KEYS[3]
local k_arg, idle_before = ARGV[1], ARGV[2]
if redis.call('HGET', prof, 'loc') == 'hot' or redis.call('EXISTS', ib) == 0 then
  return {0, 0, 0, 0}
end
local devs = redis.call('ZRANGE', devices, 0, -1, 'WITHSCORES')
local last = 0
for i = 2, #devs, 2 do
  last = math.max(last, tonumber(devs[i]))
end
local idle = 0
if last < tonumber(idle_before) then
  idle = 1
end
local n = #devs / 2
local max_fields = 20000

local cursor_of = {}
for i = 1, tonumber(k_arg) do cursor_of[ARGV[2 + i]] = KEYS[3 + i] end
local per, convs = {}, {}
for d = 1, #devs, 2 do
  local h = {}
  if cursor_of[devs[d]] then h = redis.call('HGETALL', cursor_of[devs[d]]) end
  local cur = {}
  for i = 1, #h, 2 do
    cur[h[i]] = h[i + 1]
    if string.sub(h[i], -2) ~= ':e' then
      convs[h[i]] = true
    end
  end
  per[#per + 1] = cur
end
local drift = 0
if n < 2 then convs = {} end
for conv in pairs(convs) do
  local ek = conv .. ':e'
  local top = 0
  for _, cur in ipairs(per) do
    if cur[conv] then
      top = math.max(top, tonumber(cur[ek] or '0'))
    end
  end
  local hi, lo = 0, nil
  for _, cur in ipairs(per) do
    local s = 0
    if cur[conv] and tonumber(cur[ek] or '0') == top then
      s = tonumber(cur[conv])
    end
    hi = math.max(hi, s)
    lo = math.min(lo or s, s)
  end
  drift = drift + hi - lo
end
local backlog = -1
if redis.call('HLEN', ib) <= max_fields then
  backlog = 0
  local f = redis.call('HGETALL', ib)
  local h = {}
  for i = 1, #f, 2 do h[f[i]] = f[i + 1] end
  for field, last in pairs(h) do
    if string.sub(field, 1, 1) ~= ':' and string.sub(field, -2) == ':l' then
      local conv = string.sub(field, 1, -3)
      if h[conv .. ':t'] ~= 'L' then
        local e = tonumber(h[conv .. ':e'] or '0')
        local held = tonumber(h[conv .. ':j'] or '0')
        for _, cur in ipairs(per) do
          if cur[conv] and tonumber(cur[conv .. ':e'] or '0') == e then
            held = math.max(held, tonumber(cur[conv]))
          end
        end
        backlog = backlog + math.max(0, tonumber(last) - held)
      end
    end
  end
end
return {1, n, idle, drift, backlog}
