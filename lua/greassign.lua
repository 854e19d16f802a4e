-- EMQ.REASSIGN's twin: EchoMQ's @greassign (EchoMQ.Lanes.reassign/4).
-- KEYS: row, destination lane, P ring, P paused, P glimit, P gactive, P wake.
-- ARGV: id, destination, P.
-- Reply: -1 no row or no group; 0 already there; -2 not pending in its lane;
-- 1 moved (the destination rung with a wake if serviceable, the source out
-- of the ring if now empty).
local g = redis.call('HGET', KEYS[1], 'group')
if not g then return -1 end
if g == ARGV[2] then return 0 end
local src = ARGV[3] .. 'g:' .. g .. ':pending'
if redis.call('ZREM', src, ARGV[1]) == 0 then return -2 end
redis.call('ZADD', KEYS[2], 0, ARGV[1])
redis.call('HSET', KEYS[1], 'group', ARGV[2])
if redis.call('SISMEMBER', KEYS[4], ARGV[2]) == 0 then
  local lim = redis.call('HGET', KEYS[5], ARGV[2])
  local act = tonumber(redis.call('HGET', KEYS[6], ARGV[2]) or '0')
  if (not lim or act < tonumber(lim)) and not redis.call('LPOS', KEYS[3], ARGV[2]) then
    redis.call('RPUSH', KEYS[3], ARGV[2])
    redis.call('LPUSH', KEYS[7], '1')
    redis.call('LTRIM', KEYS[7], 0, 63)
  end
end
if redis.call('ZCARD', src) == 0 then
  redis.call('LREM', KEYS[3], 0, g)
end
return 1
