-- EMQ.REAP's twin: EchoMQ's @reap (EchoMQ.Jobs.reap/2).
-- KEYS: P active, P pending. ARGV: P.
-- Expired leases, earliest first, at most 100: each leaves P active, its
-- lane's count - 1, back to its lane at score 0 (rung with a wake if
-- serviceable) or to the flat queue; state pending. Reply: the number ended.
local p = ARGV[1]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local exp = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, 100)
for _, id in ipairs(exp) do
  redis.call('ZREM', KEYS[1], id)
  local row = p .. 'job:' .. id
  local g = redis.call('HGET', row, 'group')
  if g then
    local act = redis.call('HINCRBY', p .. 'gactive', g, -1)
    if act <= 0 then redis.call('HDEL', p .. 'gactive', g) end
    redis.call('ZADD', p .. 'g:' .. g .. ':pending', 0, id)
    if redis.call('SISMEMBER', p .. 'paused', g) == 0 then
      local lim = redis.call('HGET', p .. 'glimit', g)
      if (not lim or act < tonumber(lim)) and not redis.call('LPOS', p .. 'ring', g) then
        redis.call('RPUSH', p .. 'ring', g)
        redis.call('LPUSH', p .. 'wake', '1')
        redis.call('LTRIM', p .. 'wake', 0, 63)
      end
    end
  else
    redis.call('ZADD', KEYS[2], 0, id)
  end
  redis.call('HSET', row, 'state', 'pending')
end
return #exp
