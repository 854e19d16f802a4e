-- EMQ.REVIVE's twin (after shared.lua). ARGV = job [, job ...]. Dead jobs go
-- back to their lanes' pending sets at their mint scores (ZADD NX), no
-- returns counted; the lanes ring as ENQUEUE would. Reply: the number revived.
arity(#ARGV >= 1, 'revive')
redis.call('ZCARD', DEAD); redis.call('LLEN', RING)
local seen, jobs, lanes, before = {}, {}, {}, {}
for _, job in ipairs(ARGV) do
  if not seen[job] then
    seen[job] = true
    local rec = redis.call('HGET', JDEAD, job)
    local mint, lane = nil, nil
    if rec then mint, lane = parse_record(rec) end
    if mint and lane then
      jobs[#jobs + 1] = {job, mint, lane}
      if before[lane] == nil then
        before[lane] = serviceable(lane_state(lane))
        lanes[#lanes + 1] = lane
      end
    end
  end
end
for _, it in ipairs(jobs) do
  redis.call('ZREM', DEAD, it[1])
  redis.call('HDEL', JDEAD, it[1])
  redis.call('ZADD', pending(it[3]), 'NX', it[2], it[1])
end
for _, lane in ipairs(lanes) do follow(lane, before[lane]) end
return #jobs
