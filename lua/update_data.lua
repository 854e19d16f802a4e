-- EMQ.SETDATA's twin: EchoMQ's @update_data (EchoMQ.Jobs.update_data/4).
-- KEYS: row. ARGV: payload. Reply: 1, or -1 when the row is gone.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
redis.call('HSET', KEYS[1], 'payload', ARGV[1])
return 1
