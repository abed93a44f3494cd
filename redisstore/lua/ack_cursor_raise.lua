-- Raises registered devices' cursors: the lean step of an ack, for
-- devices whose live connection already registered them (ack_cursor.lua
-- ran for them on this connection). Many devices go in one call when
-- their keys share a hash slot (any devices on a standalone server, those
-- of one slot on Redis Cluster); each device is a step of its own, its
-- status in its place. The device set is not counted and nothing is
-- evicted: a device is only checked to be still in its user's set (an
-- eviction by another device's ack may have taken it out since), and its
-- last use is written again only when the one held is older than the
-- touch interval, so that most acks write the cursor alone. A device no
-- longer in the set, or whose user moved, changes nothing here: the
-- caller runs ack_cursor.lua for it (registered afresh and told to
-- resync), or routes the user again.
--
-- The cursor's fields and how an ack raises them: ack_cursor_lib.lua,
-- prepended (as to ack_cursor.lua).
--
-- KEYS, three per device, in ARGV's order of devices:
--   KEYS[3d-2] the user's devices (zset: device -> last use ms)
--   KEYS[3d-1] the device's cursor (hash)
--   KEYS[3d]   the user's profile (hash; loc = hot: the keys moved away)
-- ARGV[1] now, ms
-- ARGV[2] touch interval, ms: a last use older than that is written again
-- ARGV[3 ..] per device: its id, k (how many triples follow), then k
--   triples: conversation, seq, epoch
-- Returns one status per device: STATUS_RAISED, STATUS_UNREGISTERED (not
-- in the set) or STATUS_MOVED (the user's keys moved to the hot store).
local STATUS_RAISED = 0
local STATUS_UNREGISTERED = 1
local STATUS_MOVED = 2
local now, touch = tonumber(ARGV[1]), tonumber(ARGV[2])
local first_device = 3

-- raise runs one device's step; its triples are ARGV[at .. at+3k-1].
local function raise(devices, cursor, prof, dev, at, k)
  if redis.call('HGET', prof, 'loc') == 'hot' then
    return STATUS_MOVED
  end
  local used = redis.call('ZSCORE', devices, dev)
  if not used then
    return STATUS_UNREGISTERED
  end
  if now - tonumber(used) >= touch then
    redis.call('ZADD', devices, now, dev)
  end
  raise_cursor(cursor, at, at + 3 * k - 1)
  return STATUS_RAISED
end

local out = {}
local a = first_device
for d = 1, #KEYS / 3 do
  local k = tonumber(ARGV[a + 1])
  out[d] = raise(KEYS[3 * d - 2], KEYS[3 * d - 1], KEYS[3 * d], ARGV[a], a + 2, k)
  a = a + 2 + 3 * k
end
return out
