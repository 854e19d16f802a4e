-- EMQ.QBCLAIM's twin: EchoMQ's @bclaim (EchoMQ.Jobs.claim_batch/4; the host
-- answers [] itself while P meta says paused).
-- KEYS: P pending, P active. ARGV: P job:, lease (ms), n.
-- Up to n of the flat queue's first jobs are leased, one deadline for all.
-- Reply: [[id, payload, attempts], ...], or [].
local depth = redis.call('ZCARD', KEYS[1])
if depth == 0 then return {} end
local n = tonumber(ARGV[3])
if depth < n then n = depth end
local t = redis.call('TIME')
local deadline = t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[2])
local served = {}
for _ = 1, n do
  local head = redis.call('ZPOPMIN', KEYS[1])
  if #head == 0 then break end
  local id = head[1]
  local row = ARGV[1] .. id
  local att = redis.call('HINCRBY', row, 'attempts', 1)
  redis.call('HSET', row, 'state', 'active')
  redis.call('ZADD', KEYS[2], deadline, id)
  served[#served + 1] = {id, redis.call('HGET', row, 'payload'), att}
end
return served
