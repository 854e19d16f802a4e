-- EMQ.DRAIN's twin: EchoMQ's @gdrain (EchoMQ.Lanes.drain/3).
-- KEYS: P, lane, P ring. ARGV: lane name.
-- Every pending job of the lane loses its row and logs; the lane's set is
-- deleted and the lane leaves the ring. Reply: the number drained.
local ids = redis.call('ZRANGE', KEYS[2], 0, -1)
for _, id in ipairs(ids) do
  local row = KEYS[1] .. 'job:' .. id
  redis.call('DEL', row, row .. ':logs')
end
redis.call('DEL', KEYS[2])
redis.call('LREM', KEYS[3], 0, ARGV[1])
return #ids
