-- EMQ.LIMIT's twin: EchoMQ's @glimit (EchoMQ.Lanes.limit/4).
-- KEYS: P glimit, P gactive, P ring, P paused, P wake. ARGV: P, lane, n.
-- The ceiling set; at or over it the lane leaves the ring, under it the lane
-- is rung (with a wake) if serviceable. Reply: 1.
redis.call('HSET', KEYS[1], ARGV[2], ARGV[3])
local act = tonumber(redis.call('HGET', KEYS[2], ARGV[2]) or '0')
if act >= tonumber(ARGV[3]) then
  redis.call('LREM', KEYS[3], 0, ARGV[2])
else
  local lane = ARGV[1] .. 'g:' .. ARGV[2] .. ':pending'
  if redis.call('SISMEMBER', KEYS[4], ARGV[2]) == 0 and redis.call('ZCARD', lane) > 0 and
     not redis.call('LPOS', KEYS[3], ARGV[2]) then
    redis.call('RPUSH', KEYS[3], ARGV[2])
    redis.call('LPUSH', KEYS[5], '1')
    redis.call('LTRIM', KEYS[5], 0, 63)
  end
end
return 1
