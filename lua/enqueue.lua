-- EMQ.QENQUEUE's twin (one pair): EchoMQ's @enqueue (EchoMQ.Jobs.enqueue/5).
-- KEYS: row, P pending. ARGV: id, payload.
-- The kind rule; a duplicate (the row exists) is skipped; else the row is
-- written and the job joins the flat queue at score 0. Reply: 1, or 0.
if string.sub(ARGV[1], 1, 3) ~= 'JOB' then
  return redis.error_reply('EMQKIND job id must be JOB-namespaced')
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', '0', 'payload', ARGV[2])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return 1
