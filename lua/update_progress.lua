-- EMQ.PROGRESS's twin: EchoMQ's @update_progress
-- (EchoMQ.Jobs.update_progress/4).
-- KEYS: row. ARGV: progress, id, base.
-- The row's progress; {event, job, progress} published on base .. 'events'
-- as JSON. Reply: 1, or -1 when the row is gone.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
redis.call('HSET', KEYS[1], 'progress', ARGV[1])
redis.call('PUBLISH', ARGV[3] .. 'events',
  cjson.encode({event = 'progress', job = ARGV[2], progress = ARGV[1]}))
return 1
