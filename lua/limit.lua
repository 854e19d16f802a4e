-- EMQ.LIMIT's twin (after shared.lua). ARGV = lane, n | NONE
arity(#ARGV == 2, 'limit')
local lane, n = ARGV[1], ARGV[2]
check_lane(lane)
local none = string.upper(n) == 'NONE'
if not none and not (is_int(n) and tonumber(n) >= 1) then
  fail('ERR limit must be an integer >= 1 or NONE')
end
redis.call('LLEN', RING)
local was = serviceable(lane_state(lane))
if none then redis.call('HDEL', LIMIT, lane) else redis.call('HSET', LIMIT, lane, n) end
follow(lane, was)
return redis.status_reply('OK')
