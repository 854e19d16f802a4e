-- EMQ.WCLAIM's Lua twin: the seed's @gwclaim (EchoMQ.Lanes.wclaim/3).
-- KEYS[1] = P..'gring', ARGV[1] = P, ARGV[2] = lease (ms).
-- Reply: {lane, deadline, job...} or {}.
if #KEYS ~= 1 or #ARGV ~= 2 then
  return redis.error_reply("ERR wrong number of arguments for 'emq.wclaim' command")
end
if ARGV[1] == '' then return redis.error_reply('ERR the prefix must not be empty') end
if not string.match(ARGV[2], '^[1-9]%d*$') or tonumber(ARGV[2]) > 1099511627776 then
  return redis.error_reply('ERR lease must be an integer from 1 to 1099511627776')
end
-- The seed's first half, verbatim:
local g = redis.call('LMOVE', KEYS[1], KEYS[1], 'LEFT', 'RIGHT')
if not g then return {} end
local lane = ARGV[1] .. 'g:' .. g .. ':pending'
local depth = redis.call('ZCARD', lane)
if depth == 0 then
  redis.call('LREM', KEYS[1], 0, g)
  return {}
end
local w = tonumber(redis.call('HGET', ARGV[1] .. 'gweight', g) or '1')
if w < 1 then w = 1 end
local k = w
if depth < k then k = depth end
local lim = redis.call('HGET', ARGV[1] .. 'glimit', g)
if lim then
  local cur = tonumber(redis.call('HGET', ARGV[1] .. 'gactive', g) or '0')
  local headroom = tonumber(lim) - cur
  if headroom < k then k = headroom end
end
-- The second half (SPEC section 2): lease K heads under one deadline.
if w % 1 ~= 0 then
  return redis.error_reply("ERR weight of lane '" .. g .. "' in '" .. ARGV[1] .. "gweight' is not an integer")
end
if lim and tonumber(lim) % 1 ~= 0 then
  return redis.error_reply("ERR limit of lane '" .. g .. "' in '" .. ARGV[1] .. "glimit' is not an integer")
end
if k % 1 ~= 0 then
  return redis.error_reply("ERR active count of lane '" .. g .. "' in '" .. ARGV[1] .. "gactive' is not an integer")
end
if k <= 0 then
  redis.call('LREM', KEYS[1], 0, g)
  return {}
end
local t = redis.call('TIME')
local deadline = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[2])
local popped = redis.call('ZPOPMIN', lane, k)
local leases, jlease = ARGV[1] .. 'leases', ARGV[1] .. 'jlease'
local reply = {g, deadline}
for i = 1, #popped, 2 do
  redis.call('ZADD', leases, deadline, popped[i])
  redis.call('HSET', jlease, popped[i], popped[i + 1] .. ' ' .. g)
  reply[#reply + 1] = popped[i]
end
local active = redis.call('HINCRBY', ARGV[1] .. 'gactive', g, k)
if depth == k or (lim and active >= tonumber(lim)) then
  redis.call('LREM', KEYS[1], 0, g)
end
return reply
