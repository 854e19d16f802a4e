-- EMQ.PAUSE's twin: EchoMQ's @gpause (EchoMQ.Lanes.pause/3).
-- KEYS: P paused, P ring. ARGV: lane. Reply: 1.
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('LREM', KEYS[2], 0, ARGV[1])
return 1
