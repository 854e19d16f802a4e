-- EMQ.CLAIM's Lua twin: plain rotation (claim/3), one head per turn.
-- KEYS[1] = P, ARGV[1] = lease (ms). Reply: {lane, deadline, job} or {}.
if #KEYS ~= 1 or #ARGV ~= 1 then
  return redis.error_reply("ERR wrong number of arguments for 'emq.claim' command")
end
local p = KEYS[1]
if p == '' then return redis.error_reply('ERR the prefix must not be empty') end
if not string.match(ARGV[1], '^[1-9]%d*$') or tonumber(ARGV[1]) > 1099511627776 then
  return redis.error_reply('ERR lease must be an integer from 1 to 1099511627776')
end
local ring = p .. 'gring'
local g = redis.call('LMOVE', ring, ring, 'LEFT', 'RIGHT')
if not g then return {} end
local lane = p .. 'g:' .. g .. ':pending'
local depth = redis.call('ZCARD', lane)
if depth == 0 then
  redis.call('LREM', ring, 0, g)
  return {}
end
local k = 1
local lim = redis.call('HGET', p .. 'glimit', g)
if lim then
  if tonumber(lim) % 1 ~= 0 then
    return redis.error_reply("ERR limit of lane '" .. g .. "' in '" .. p .. "glimit' is not an integer")
  end
  local cur = tonumber(redis.call('HGET', p .. 'gactive', g) or '0')
  if tonumber(lim) - cur < k then k = tonumber(lim) - cur end
end
if k <= 0 then
  redis.call('LREM', ring, 0, g)
  return {}
end
local t = redis.call('TIME')
local deadline = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
local popped = redis.call('ZPOPMIN', lane, 1)
redis.call('ZADD', p .. 'leases', deadline, popped[1])
redis.call('HSET', p .. 'jlease', popped[1], popped[2] .. ' ' .. g)
local active = redis.call('HINCRBY', p .. 'gactive', g, 1)
if depth == 1 or (lim and active >= tonumber(lim)) then
  redis.call('LREM', ring, 0, g)
end
return {g, deadline, popped[1]}
