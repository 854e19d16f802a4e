-- EMQ.MAXED's twin: EchoMQ's @is_maxed (EchoMQ.Metrics.is_maxed/2).
-- KEYS: P meta, P active. Reply: 0, or EMQRATE at the concurrency ceiling.
local cap = tonumber(redis.call('HGET', KEYS[1], 'concurrency') or '0')
if cap > 0 and redis.call('ZCARD', KEYS[2]) >= cap then
  return redis.error_reply('EMQRATE at concurrency ceiling')
end
return 0
