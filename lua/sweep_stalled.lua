-- EMQ.REAP … MAXSTALLED's twin: EchoMQ's @sweep_stalled (EchoMQ.Stalled).
-- KEYS: P active, P pending, P dead. ARGV: P, max, n.
-- Expired leases, earliest first, at most n: each adds 1 to its row's
-- stalled; at max it dies (state dead, last_error stalled, into P dead, the
-- failed count + 1, its lane's count - 1), else it goes back as @reap
-- returns it. Reply: {{returned ids}, {dead ids}}.
local p = ARGV[1]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local exp = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[3]))
local back, dead = {}, {}
for _, id in ipairs(exp) do
  redis.call('ZREM', KEYS[1], id)
  local row = p .. 'job:' .. id
  local stalled = redis.call('HINCRBY', row, 'stalled', 1)
  local g = redis.call('HGET', row, 'group')
  if stalled >= tonumber(ARGV[2]) then
    redis.call('HSET', row, 'state', 'dead', 'last_error', 'stalled')
    redis.call('ZADD', KEYS[3], 0, id)
    redis.call('HINCRBY', p .. 'metrics:failed', 'count', 1)
    if g then
      local act = redis.call('HINCRBY', p .. 'gactive', g, -1)
      if act <= 0 then redis.call('HDEL', p .. 'gactive', g) end
    end
    dead[#dead + 1] = id
  else
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
    back[#back + 1] = id
  end
end
return {back, dead}
