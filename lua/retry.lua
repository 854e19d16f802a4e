-- EMQ.RETRY's twin: EchoMQ's @retry (EchoMQ.Jobs.retry/7, without the flow
-- keys a flow child's host adds).
-- KEYS: P active, P schedule, P dead, row. ARGV: id, token, delay, max,
-- error, P.
-- The job leaves its lease (as @complete); last_error set; at max attempts
-- it dies (state dead, into P dead, the failed count + 1), else it is
-- delayed (state scheduled, into P schedule at now + delay).
-- Reply: 'dead' or 'scheduled'; EMQSTALE when gone or on another token.
local att = redis.call('HGET', KEYS[4], 'attempts')
if not att then return redis.error_reply('EMQSTALE job gone') end
if att ~= ARGV[2] then
  return redis.error_reply('EMQSTALE retry token mismatch')
end
local p = ARGV[6]
local g = redis.call('HGET', KEYS[4], 'group')
local was_active = redis.call('ZREM', KEYS[1], ARGV[1])
if g then
  local lane = p .. 'g:' .. g .. ':pending'
  if was_active == 1 then
    local act = redis.call('HINCRBY', p .. 'gactive', g, -1)
    if act <= 0 then redis.call('HDEL', p .. 'gactive', g) end
    if redis.call('SISMEMBER', p .. 'paused', g) == 0 and redis.call('ZCARD', lane) > 0 then
      local lim = redis.call('HGET', p .. 'glimit', g)
      if (not lim or act < tonumber(lim)) and not redis.call('LPOS', p .. 'ring', g) then
        redis.call('RPUSH', p .. 'ring', g)
        redis.call('LPUSH', p .. 'wake', '1')
        redis.call('LTRIM', p .. 'wake', 0, 63)
      end
    end
  else
    redis.call('ZREM', lane, ARGV[1])
    if redis.call('ZCARD', lane) == 0 then redis.call('LREM', p .. 'ring', 0, g) end
  end
else
  if was_active == 0 then redis.call('ZREM', p .. 'pending', ARGV[1]) end
end
redis.call('HSET', KEYS[4], 'last_error', ARGV[5])
if tonumber(att) >= tonumber(ARGV[4]) then
  redis.call('HSET', KEYS[4], 'state', 'dead')
  redis.call('ZADD', KEYS[3], 0, ARGV[1])
  redis.call('HINCRBY', p .. 'metrics:failed', 'count', 1)
  return 'dead'
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('HSET', KEYS[4], 'state', 'scheduled')
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[3]), ARGV[1])
return 'scheduled'
