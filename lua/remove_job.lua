-- EMQ.REMOVE's twin: EchoMQ's @remove_job (EchoMQ.Jobs.remove_job/4).
-- KEYS: row, P pending, P active, P schedule, P dead, P de:<dedup>.
-- ARGV: id, dedup ('' for none).
-- EMQLOCK while a flow holds the job; else it leaves the four sets (not its
-- lane, nor its lane's count), the dedup key goes when it names the job,
-- and the row and its logs are deleted. Reply: 1, or -1 when the row is gone.
local row = KEYS[1]
if redis.call('EXISTS', row) == 0 then return -1 end
if redis.call('EXISTS', row .. ':lock') == 1
   or redis.call('HEXISTS', row, 'lock') == 1 then
  return redis.error_reply('EMQLOCK job is locked')
end
local id = ARGV[1]
for i = 2, 5 do
  redis.call('ZREM', KEYS[i], id)
end
if ARGV[2] ~= '' and redis.call('GET', KEYS[6]) == id then
  redis.call('DEL', KEYS[6])
end
redis.call('DEL', row, row .. ':logs')
return 1
