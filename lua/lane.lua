-- EMQ.LANE's twin (after shared.lua). ARGV = lane. RESP2 shape: a flat
-- field/value array.
arity(#ARGV == 1, 'lane')
local lane = ARGV[1]
check_lane(lane)
local s = lane_state(lane)
local w = stored_int(WEIGHT, lane, 'weight of lane')
if not w or w < 1 then w = 1 end
local ringed = redis.call('LPOS', RING, lane) and 1 or 0
return {'depth', s.depth, 'active', s.active, 'weight', w, 'limit', s.limit or false,
  'paused', s.paused and 1 or 0, 'ringed', ringed}
