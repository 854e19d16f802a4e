-- EMQ.QPAUSE's twin: EchoMQ's queue pause (EchoMQ.Admin.pause/2).
-- KEYS: P meta. Reply: 1.
redis.call('HSET', KEYS[1], 'paused', '1')
return 1
