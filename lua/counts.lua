-- EMQ.COUNTS's twin: EchoMQ's @counts (EchoMQ.Metrics.get_counts/3).
-- KEYS: base, then the sets to count. ARGV: counter names (base ..
-- 'metrics:' .. name, field count). Reply: the counts, in order.
local base = KEYS[1]
local out = {}
for i = 2, #KEYS do
  out[#out + 1] = redis.call('ZCARD', KEYS[i])
end
for i = 1, #ARGV do
  out[#out + 1] = tonumber(redis.call('HGET', base .. 'metrics:' .. ARGV[i], 'count') or '0')
end
return out
