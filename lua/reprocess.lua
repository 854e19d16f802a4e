-- EMQ.REPROCESS's twin: EchoMQ's @reprocess (EchoMQ.Jobs.reprocess_job/3).
-- KEYS: row, P dead, P pending. ARGV: id.
-- A dead job back to the flat queue (a lane job too), its last error
-- cleared, attempts kept. Reply: 1, -1 when the row is gone, or EMQSTATE.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
if redis.call('ZREM', KEYS[2], ARGV[1]) ~= 1 then
  return redis.error_reply('EMQSTATE not dead')
end
redis.call('HDEL', KEYS[1], 'last_error')
redis.call('HSET', KEYS[1], 'state', 'pending')
redis.call('ZADD', KEYS[3], 0, ARGV[1])
return 1
