-- Sets the preview of one conversation in one user's preview hash unless
-- the stored preview is of a newer message: previews arrive per partition
-- in order, but a replayed batch or a rebalance may bring an older one
-- after a newer one. Newer means a higher (epoch, seq).
--
-- KEYS[1] the user's previews (hash: conv -> preview JSON)
-- KEYS[2] the user's profile (hash; ro = 1 for receive-only accounts,
--         which keep no inbox and so no previews; loc = hot: the user's
--         keys moved to the hot store)
-- ARGV[1] conversation id
-- ARGV[2] epoch of the message
-- ARGV[3] seq of the message
-- ARGV[4] preview JSON (carries the same epoch and seq)
-- Returns 1 when the preview was written, 0 when it was not newer (or the
-- account is receive-only). Fails with OBMOVED when the user moved.
local REFUSAL_MOVED = 'OBMOVED'
local pv, prof = KEYS[1], KEYS[2]
local conv, epoch_arg, seq_arg, preview = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local pf = redis.call('HMGET', prof, 'ro', 'loc')
if pf[2] == 'hot' then
  return redis.error_reply(REFUSAL_MOVED .. ' user lives on the hot store')
end
if pf[1] == '1' then
  return 0
end
local cur = redis.call('HGET', pv, conv)
if cur then
  local ok, p = pcall(cjson.decode, cur)
  if ok and type(p) == 'table' then
    local e, s = tonumber(p.epoch) or 0, tonumber(p.seq) or 0
    local ne, ns = tonumber(epoch_arg), tonumber(seq_arg)
    if e > ne or (e == ne and s >= ns) then
      return 0
    end
  end
end
redis.call('HSET', pv, conv, preview)
return 1
