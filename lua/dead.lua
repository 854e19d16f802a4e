-- EMQ.DEAD's twin (after shared.lua). ARGV = [COUNT, n]. Reply: the oldest
-- n dead jobs, each {job, lane (false when its record is damaged), died_at}.
arity(true, 'dead')
local count = count_option()
redis.call('HLEN', JDEAD)
local rows = {}
local dead = redis.call('ZRANGE', DEAD, 0, tonumber(count) - 1, 'WITHSCORES')
for i = 1, #dead, 2 do
  local rec = redis.call('HGET', JDEAD, dead[i])
  local lane = false
  if rec then
    local sp = string.find(rec, ' ', 1, true)
    if sp and sp > 1 and sp < #rec then lane = string.sub(rec, sp + 1) end
  end
  rows[#rows + 1] = {dead[i], lane, tonumber(dead[i + 1])}
end
return rows
