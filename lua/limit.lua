-- EMQ.LIMIT's twin (after shared.lua). ARGV = lane, n | NONE
arity(#ARGV == 2, 'limit')
local lane, n = ARGV[1], ARGV[2]
check_lane(lane)
local none = string.upper(n) == 'NONE'
if not none and not (is_int(n) and tonumber(n) >= 1) then
  fail('ERR limit must be an integer >= 1 or NONE')
end
redis.call('LLEN', RING)
-- A damaged ceiling is replaced, and the ring then follows the new state alone.
local old = redis.call('HGET', LIMIT, lane)
local damaged = old and not is_int(old)
local was
if damaged then
  stored_int(ACTIVE, lane, 'active count of lane')
else
  was = serviceable(lane_state(lane))
end
if none then redis.call('HDEL', LIMIT, lane) else redis.call('HSET', LIMIT, lane, n) end
if damaged then
  local now = serviceable(lane_state(lane))
  local held = #redis.call('LPOS', RING, lane, 'COUNT', 0)
  if held ~= (now and 1 or 0) then
    redis.call('LREM', RING, 0, lane)
    if now then redis.call('RPUSH', RING, lane) end
  end
else
  follow(lane, was)
end
return redis.status_reply('OK')
