-- EMQ.REAP … GROUP's twin: EchoMQ's @greap_group (EchoMQ.Lanes.reap_group/4).
-- KEYS: P active, P. ARGV: lane, n.
-- Of the first n expired leases, those whose row names the lane go back as
-- @reap returns them; the others stay. Reply: the number recovered.
local base = KEYS[2]
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local exp = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'LIMIT', 0, tonumber(ARGV[2]))
local n = 0
for _, id in ipairs(exp) do
  local row = base .. 'job:' .. id
  local g = redis.call('HGET', row, 'group')
  if g == ARGV[1] then
    redis.call('ZREM', KEYS[1], id)
    local act = redis.call('HINCRBY', base .. 'gactive', g, -1)
    if act <= 0 then redis.call('HDEL', base .. 'gactive', g) end
    redis.call('ZADD', base .. 'g:' .. g .. ':pending', 0, id)
    if redis.call('SISMEMBER', base .. 'paused', g) == 0 then
      local lim = redis.call('HGET', base .. 'glimit', g)
      if (not lim or act < tonumber(lim)) and not redis.call('LPOS', base .. 'ring', g) then
        redis.call('RPUSH', base .. 'ring', g)
        redis.call('LPUSH', base .. 'wake', '1')
        redis.call('LTRIM', base .. 'wake', 0, 63)
      end
    end
    redis.call('HSET', row, 'state', 'pending')
    n = n + 1
  end
end
return n
