-- EMQ.COMPLETE's twin: EchoMQ's @complete (EchoMQ.Jobs.complete/5, without
-- the flow keys a flow child's host adds).
-- KEYS: P active, row. ARGV: id, token, P.
-- Reply: 0 no row; EMQSTALE on another token; else 1: the job leaves its
-- lease (a lane job's count - 1, the lane rung with a wake if now
-- serviceable) or, not leased, its lane (out of the ring if now empty) or
-- the flat queue; its row is deleted; the completed count + 1.
local att = redis.call('HGET', KEYS[2], 'attempts')
if not att then return 0 end
if att ~= ARGV[2] then
  return redis.error_reply('EMQSTALE complete token mismatch')
end
local p = ARGV[3]
local g = redis.call('HGET', KEYS[2], 'group')
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
redis.call('DEL', KEYS[2])
redis.call('HINCRBY', p .. 'metrics:completed', 'count', 1)
return 1
