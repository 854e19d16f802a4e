-- EMQ.RATETTL's twin: EchoMQ's @rate_ttl (EchoMQ.Metrics.get_rate_limit_ttl/3).
-- KEYS: P limiter, P meta. ARGV: max (0: P meta's max).
-- Reply: the limiter's ms left once its count reached max, else 0.
local max = tonumber(ARGV[1])
if max == 0 then
  max = tonumber(redis.call('HGET', KEYS[2], 'max') or '0')
end
if max > 0 and max <= tonumber(redis.call('GET', KEYS[1]) or '0') then
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then return ttl end
end
return 0
