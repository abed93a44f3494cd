-- Checks one chunk of a conversation's timeline against the meta, in one
-- consistent read: the list holds exactly the seqs first..seq, and each
-- entry is "SEQ:WRITE_MS:" with its own seq followed by a body. Nothing is
-- changed.
--
-- KEYS[1] conversation meta (hash)
-- KEYS[2] conversation timeline (list)
-- ARGV[1] first seq to check (below the floor: from the floor)
-- ARGV[2] most entries checked
-- Returns {seq, first, length, epoch, next seq to check, bad seq, reason}
-- as strings; reason is '' when the chunk is sound.
local meta, tl = KEYS[1], KEYS[2]
local from_arg, most = ARGV[1], ARGV[2]
local m = redis.call('HMGET', meta, 'seq', 'first', 'epoch')
local seq = tonumber(m[1]) or 0
local first = tonumber(m[2]) or 1
local len = redis.call('LLEN', tl)
local function out(nxt, bad, why)
  return {string.format('%d', seq), string.format('%d', first), string.format('%d', len),
    m[3] or '', string.format('%d', nxt), string.format('%d', bad), why}
end
if first < 1 or first > seq + 1 then
  return out(seq + 1, first, 'first ' .. first .. ' is outside 1..seq+1 = ' .. (seq + 1))
end
if first + len - 1 ~= seq then
  return out(seq + 1, first + len, 'the timeline holds ' .. len .. ' entries, the seqs ' .. first .. '..' .. seq .. ' are ' .. (seq - first + 1))
end
local from = math.max(tonumber(from_arg), first)
if from > seq then
  return out(seq + 1, 0, '')
end
local idx = from - first
local entries = redis.call('LRANGE', tl, idx, idx + tonumber(most) - 1)
for i, e in ipairs(entries) do
  local want = from + i - 1
  local s, w = string.match(e, '^(%d+):(%d+):')
  if not s then
    return out(seq + 1, want, 'entry without a SEQ:WRITE_MS: prefix')
  end
  if tonumber(s) ~= want then
    return out(seq + 1, want, 'the entry there holds seq ' .. s)
  end
  if #e == #s + #w + 2 then
    return out(seq + 1, want, 'entry without a body')
  end
end
return out(from + #entries, 0, '')
