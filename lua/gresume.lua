-- EMQ.RESUME's twin: EchoMQ's @gresume (EchoMQ.Lanes.resume/3).
-- KEYS: P paused, P ring, P glimit, P gactive, P wake. ARGV: P, lane.
-- Out of P paused; rung (with a wake) if serviceable. Reply: 1.
redis.call('SREM', KEYS[1], ARGV[2])
local lane = ARGV[1] .. 'g:' .. ARGV[2] .. ':pending'
if redis.call('ZCARD', lane) > 0 then
  local lim = redis.call('HGET', KEYS[3], ARGV[2])
  local act = tonumber(redis.call('HGET', KEYS[4], ARGV[2]) or '0')
  if (not lim or act < tonumber(lim)) and not redis.call('LPOS', KEYS[2], ARGV[2]) then
    redis.call('RPUSH', KEYS[2], ARGV[2])
    redis.call('LPUSH', KEYS[5], '1')
    redis.call('LTRIM', KEYS[5], 0, 63)
  end
end
return 1
