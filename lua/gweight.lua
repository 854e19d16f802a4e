-- EMQ.WEIGHT's twin: EchoMQ's @gweight (EchoMQ.Lanes.weight/4).
-- KEYS: P gweight. ARGV: lane, weight. Reply: 1.
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
