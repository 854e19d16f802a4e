-- EMQ.DEPTHS's twin: EchoMQ's @lane_counts (EchoMQ.Metrics.lane_depths/3).
-- KEYS: base (the slot). ARGV: base, then lanes. Reply: each lane's depth.
local base = ARGV[1]
local out = {}
for i = 2, #ARGV do
  out[i - 1] = redis.call('ZCARD', base .. 'g:' .. ARGV[i] .. ':pending')
end
return out
