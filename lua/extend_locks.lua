-- EMQ.MEXTEND's twin: EchoMQ's @extend_locks (EchoMQ.Jobs.extend_locks/4).
-- KEYS: P active. ARGV: base, lease (ms), then id, token pairs.
-- Each job whose attempts is its token gets the deadline now + lease (a job
-- not leased is put into P active all the same). Reply: the ids of the
-- others (a row gone or another token), in order.
local base = ARGV[1]
local t = redis.call('TIME')
local deadline = t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[2])
local failed = {}
local i = 3
while i < #ARGV do
  local id = ARGV[i]
  local att = redis.call('HGET', base .. 'job:' .. id, 'attempts')
  if att and att == ARGV[i + 1] then
    redis.call('ZADD', KEYS[1], deadline, id)
  else
    failed[#failed + 1] = id
  end
  i = i + 2
end
return failed
