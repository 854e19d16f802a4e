-- EMQ.REASSIGN's twin (after shared.lua). ARGV = job, from, to
arity(#ARGV == 3, 'reassign')
local job, from, to = ARGV[1], ARGV[2], ARGV[3]
check_lane(from)
check_lane(to)
redis.call('LLEN', RING)
local from_was = serviceable(lane_state(from))
local to_was = serviceable(lane_state(to))
local mint = redis.call('ZSCORE', pending(from), job)
if not mint or from == to then return 0 end
redis.call('ZREM', pending(from), job)
redis.call('ZADD', pending(to), mint, job)
follow(from, from_was)
follow(to, to_was)
return 1
