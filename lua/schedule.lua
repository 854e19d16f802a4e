-- EMQ.QSCHEDULE's twin: EchoMQ's @schedule (EchoMQ.Jobs.enqueue_in/6 and
-- enqueue_at/6).
-- KEYS: row, P schedule. ARGV: id, payload, 'in' or 'at', ms.
-- The kind rule; a duplicate is skipped; else the row is written as
-- scheduled and the job is due at now + ms ('in') or at ms ('at').
-- Reply: 1, or 0.
if string.sub(ARGV[1], 1, 3) ~= 'JOB' then
  return redis.error_reply('EMQKIND job id must be JOB-namespaced')
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
local due
if ARGV[3] == 'in' then
  local t = redis.call('TIME')
  due = t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[4])
else
  due = tonumber(ARGV[4])
end
redis.call('HSET', KEYS[1], 'state', 'scheduled', 'attempts', '0', 'payload', ARGV[2])
redis.call('ZADD', KEYS[2], due, ARGV[1])
return 1
