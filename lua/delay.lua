-- EMQ.DELAY's twin: EchoMQ's @delay.
-- KEYS: row, P active, P schedule. ARGV: id, token, 'in' | 'at', ms.
-- The kind rule; EMQSTALE when gone or on another token; else out of
-- P active into P schedule at now + ms ('in') or ms ('at'), state scheduled,
-- attempts kept (a lane job's count is left as it was). Reply: 1.
if string.sub(ARGV[1], 1, 3) ~= 'JOB' then
  return redis.error_reply('EMQKIND job id must be JOB-namespaced')
end
local att = redis.call('HGET', KEYS[1], 'attempts')
if not att then return redis.error_reply('EMQSTALE job gone') end
if att ~= ARGV[2] then
  return redis.error_reply('EMQSTALE delay token mismatch')
end
local due = tonumber(ARGV[4])
if ARGV[3] == 'in' then
  local t = redis.call('TIME')
  due = t[1] * 1000 + math.floor(t[2] / 1000) + due
end
redis.call('ZREM', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[3], due, ARGV[1])
redis.call('HSET', KEYS[1], 'state', 'scheduled')
return 1
