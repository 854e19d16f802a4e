-- EMQ.ENQUEUE's twin (one pair): EchoMQ's @genqueue (EchoMQ.Lanes.enqueue/5).
-- KEYS: row, lane, P ring, P paused, P glimit, P gactive, P wake.
-- ARGV: id, payload, lane.
-- The kind rule; a duplicate (the row exists) is skipped; else the row is
-- written and the job joins the lane at score 0; the lane is rung (with a
-- wake) if serviceable and not yet in the ring. Reply: 1, or 0.
if string.sub(ARGV[1], 1, 3) ~= 'JOB' then
  return redis.error_reply('EMQKIND job id must be JOB-namespaced')
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', '0', 'payload', ARGV[2], 'group', ARGV[3])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
if redis.call('SISMEMBER', KEYS[4], ARGV[3]) == 0 then
  local lim = redis.call('HGET', KEYS[5], ARGV[3])
  local act = tonumber(redis.call('HGET', KEYS[6], ARGV[3]) or '0')
  if (not lim or act < tonumber(lim)) and not redis.call('LPOS', KEYS[3], ARGV[3]) then
    redis.call('RPUSH', KEYS[3], ARGV[3])
    redis.call('LPUSH', KEYS[7], '1')
    redis.call('LTRIM', KEYS[7], 0, 63)
  end
end
return 1
