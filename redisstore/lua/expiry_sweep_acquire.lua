-- Takes (or renews) the lease on a sweep job (the scan of one Redis node,
-- or another periodic task) when the job is due, and returns where the job
-- stands. Several expiry processes share the work: the holder of a node's
-- lease scans it, step by step, from the cursor the previous holder left;
-- the others leave the node alone until the lease lapses (its holder died)
-- or is released at the end of a cycle.
--
-- KEYS[1] the job's lease (string: token, with an expiry)
-- KEYS[2] the sweep state (hash: JOB:cursor, JOB:cycle, JOB:done)
-- ARGV[1] the caller's token
-- ARGV[2] lease duration in ms
-- ARGV[3] the job's name (a node, or another periodic task)
-- ARGV[4] now in ms
-- ARGV[5] least time in ms between the end of a cycle and the start of the
--         next (0: start now); a cycle under way is always continued
-- Returns {held (1 or 0), cursor, cycles completed, end of the last cycle in ms}.
local lease, state = KEYS[1], KEYS[2]
local token, lease_ms, job, now = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local pause_ms = ARGV[5]
local st = redis.call('HMGET', state, job .. ':cursor', job .. ':cycle', job .. ':done')
local cursor, cycle, done = st[1] or '0', st[2] or '0', st[3] or '0'
local held = '0'
if cursor == '0' and tonumber(done) + tonumber(pause_ms) > tonumber(now)
    and redis.call('GET', lease) ~= token then
  -- Swept recently enough: not due yet.
  held = '0'
elseif redis.call('SET', lease, token, 'NX', 'PX', lease_ms) then
  held = '1'
elseif redis.call('GET', lease) == token then
  redis.call('PEXPIRE', lease, lease_ms)
  held = '1'
end
return {held, cursor, cycle, done}
