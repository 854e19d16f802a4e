-- EMQ.QCLAIM's twin: EchoMQ's @claim (EchoMQ.Jobs.claim/3; the host answers
-- [] itself while P meta says paused).
-- KEYS: P pending, P active. ARGV: P job: (the rows' prefix), lease (ms).
-- The flat queue's first job is leased until now + lease, its attempts + 1
-- (the token). Reply: [id, payload, attempts], or [].
local head = redis.call('ZPOPMIN', KEYS[1])
if #head == 0 then return {} end
local id = head[1]
local row = ARGV[1] .. id
local att = redis.call('HINCRBY', row, 'attempts', 1)
redis.call('HSET', row, 'state', 'active')
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), id)
return {id, redis.call('HGET', row, 'payload'), att}
