-- EMQ.EXTEND's twin: EchoMQ's @extend_lock (EchoMQ.Jobs.extend_lock/5).
-- KEYS: P active, row. ARGV: id, token, lease (ms).
-- Reply: -1 no row; EMQSTALE on another token; else 1, the deadline now +
-- lease (a job not leased is put into P active all the same).
local att = redis.call('HGET', KEYS[2], 'attempts')
if not att then return -1 end
if att ~= ARGV[2] then
  return redis.error_reply('EMQSTALE extend token mismatch')
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
return 1
