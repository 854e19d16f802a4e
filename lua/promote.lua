-- EMQ.PROMOTE's twin: EchoMQ's @promote (EchoMQ.Jobs.promote/3).
-- KEYS: P schedule, P pending. ARGV: P, n.
-- Due jobs, earliest first, at most n: out of P schedule, back to their lane
-- at score 0 (rung with a wake if serviceable) or to the flat queue; state
-- pending. Reply: the number promoted.
local p = ARGV[1]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
for _, id in ipairs(due) do
  redis.call('ZREM', KEYS[1], id)
  local row = p .. 'job:' .. id
  local g = redis.call('HGET', row, 'group')
  if g then
    redis.call('ZADD', p .. 'g:' .. g .. ':pending', 0, id)
    if redis.call('SISMEMBER', p .. 'paused', g) == 0 then
      local lim = redis.call('HGET', p .. 'glimit', g)
      local act = tonumber(redis.call('HGET', p .. 'gactive', g) or '0')
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
return #due
