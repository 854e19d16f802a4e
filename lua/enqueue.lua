-- EMQ.ENQUEUE's twin (after shared.lua). ARGV = lane, mint, job [, mint, job ...]
arity(#ARGV >= 3 and #ARGV % 2 == 1, 'enqueue')
local lane = ARGV[1]
check_lane(lane)
for i = 2, #ARGV, 2 do
  if not is_float(ARGV[i]) then fail('ERR mint must be a float') end
end
redis.call('LLEN', RING)
local was = serviceable(lane_state(lane))
redis.call('HLEN', JLEASE); redis.call('HLEN', JDEAD)
local pairs = {}
for i = 2, #ARGV, 2 do
  -- a job id leased or dead is not added
  if redis.call('HEXISTS', JLEASE, ARGV[i + 1]) == 0 and redis.call('HEXISTS', JDEAD, ARGV[i + 1]) == 0 then
    pairs[#pairs + 1] = ARGV[i]
    pairs[#pairs + 1] = ARGV[i + 1]
  end
end
if #pairs == 0 then return 0 end
local added = redis.call('ZADD', pending(lane), 'NX', unpack(pairs))
if added > 0 then follow(lane, was) end
return added
