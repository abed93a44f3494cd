-- ack_cursor_lib.lua: a device's cursor raised by ack triples, shared by
-- ack_cursor.lua and ack_cursor_raise.lua. It is prepended to both (see
-- ack.go) and does nothing on its own.
--
-- Cursor fields: C -> highest seq acked; C:e -> the epoch that seq belongs
-- to. An ack of a newer epoch replaces the cursor (seqs of two epochs are
-- not comparable; epochs are creation times, so they only grow); an ack of
-- the same epoch only raises it and one of an older epoch is ignored, so a
-- replayed or reordered ack changes nothing.

-- raise_cursor applies the triples ARGV[from .. last] (conversation, seq,
-- epoch) to the cursor hash: its fields are read in one HMGET and the
-- raised ones written in one HSET (an ack names every conversation a
-- device stored: a command per field was most of the work), in chunks
-- within Lua's argument limit.
local function raise_cursor(cursor, from, last)
  local fields, pos = {}, {}
  for i = from, last, 3 do
    local conv = ARGV[i]
    if not pos[conv] then
      pos[conv] = #fields + 1
      fields[#fields + 1] = conv
      fields[#fields + 1] = conv .. ':e'
    end
  end
  if #fields == 0 then return end
  local held = {}
  for i = 1, #fields, 500 do
    local part = redis.call('HMGET', cursor, unpack(fields, i, math.min(i + 499, #fields)))
    for j = 1, #part do held[i + j - 1] = part[j] end
  end
  local changed = {}
  for i = from, last, 3 do
    local f = pos[ARGV[i]]
    local seq, epoch = tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
    local cur, cur_epoch = tonumber(held[f] or '0'), tonumber(held[f + 1] or '0')
    if epoch > cur_epoch then
      held[f], held[f + 1] = ARGV[i + 1], ARGV[i + 2]
      changed[f], changed[f + 1] = true, true
    elseif epoch == cur_epoch and seq > cur then
      held[f] = ARGV[i + 1]
      changed[f] = true
    end
  end
  local writes = {}
  for f = 1, #fields do
    if changed[f] then
      writes[#writes + 1] = fields[f]
      writes[#writes + 1] = held[f]
    end
  end
  for i = 1, #writes, 500 do
    redis.call('HSET', cursor, unpack(writes, i, math.min(i + 499, #writes)))
  end
end
