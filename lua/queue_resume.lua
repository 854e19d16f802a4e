-- EMQ.QRESUME's twin: EchoMQ's queue resume (EchoMQ.Admin.resume/2).
-- KEYS: P meta. Reply: 1.
redis.call('HDEL', KEYS[1], 'paused')
return 1
