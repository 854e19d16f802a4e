-- EMQ.BCLAIM's twin: EchoMQ's @gbclaim (EchoMQ.Lanes.bclaim/3).
-- KEYS: P ring, P active. ARGV: P, lease (ms).
-- One rota step, then K = min(depth, headroom) heads of the rotated lane
-- (no cap) leased under one deadline; the lane's count + K; a lane at its
-- ceiling or emptied leaves the ring.
-- Reply: {{id, payload, attempts, lane}, ...}, or {}.
local g = redis.call('LMOVE', KEYS[1], KEYS[1], 'LEFT', 'RIGHT')
if not g then return {} end
local lane = ARGV[1] .. 'g:' .. g .. ':pending'
local depth = redis.call('ZCARD', lane)
if depth == 0 then
  redis.call('LREM', KEYS[1], 0, g)
  return {}
end
local k = depth
local lim = redis.call('HGET', ARGV[1] .. 'glimit', g)
if lim then
  local cur = tonumber(redis.call('HGET', ARGV[1] .. 'gactive', g) or '0')
  if tonumber(lim) - cur < k then k = tonumber(lim) - cur end
end
if k <= 0 then
  redis.call('LREM', KEYS[1], 0, g)
  return {}
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local served = {}
for _ = 1, k do
  local id = redis.call('ZPOPMIN', lane)[1]
  local row = ARGV[1] .. 'job:' .. id
  local att = redis.call('HINCRBY', row, 'attempts', 1)
  redis.call('HSET', row, 'state', 'active')
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), id)
  served[#served + 1] = {id, redis.call('HGET', row, 'payload'), att, g}
end
local act = redis.call('HINCRBY', ARGV[1] .. 'gactive', g, k)
if lim and act >= tonumber(lim) then
  redis.call('LREM', KEYS[1], 0, g)
elseif redis.call('ZCARD', lane) == 0 then
  redis.call('LREM', KEYS[1], 0, g)
end
return served
