-- EMQ.CLAIM's twin: EchoMQ's @gclaim (EchoMQ.Lanes.claim/3).
-- KEYS: P ring, P active. ARGV: P, lease (ms).
-- One rota step, then the rotated lane's head is leased: attempts + 1 (the
-- token), state active, into P active at now + lease; the lane's count + 1;
-- a lane at its ceiling or emptied leaves the ring.
-- Reply: {id, payload, attempts, lane}, or {}.
local g = redis.call('LMOVE', KEYS[1], KEYS[1], 'LEFT', 'RIGHT')
if not g then return {} end
local lane = ARGV[1] .. 'g:' .. g .. ':pending'
local popped = redis.call('ZPOPMIN', lane)
if #popped == 0 then
  redis.call('LREM', KEYS[1], 0, g)
  return {}
end
local id = popped[1]
local row = ARGV[1] .. 'job:' .. id
local att = redis.call('HINCRBY', row, 'attempts', 1)
redis.call('HSET', row, 'state', 'active')
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), id)
local act = redis.call('HINCRBY', ARGV[1] .. 'gactive', g, 1)
local lim = redis.call('HGET', ARGV[1] .. 'glimit', g)
if lim and act >= tonumber(lim) then
  redis.call('LREM', KEYS[1], 0, g)
elseif redis.call('ZCARD', lane) == 0 then
  redis.call('LREM', KEYS[1], 0, g)
end
return {id, redis.call('HGET', row, 'payload'), att, g}
