-- EMQ.WCLAIM's Lua twin: the seed's @gwclaim (EchoMQ.Lanes.wclaim/3), after
-- shared.lua. KEYS[1] = P..'gring', ARGV[1] = P, ARGV[2] = lease (ms), then
-- optionally `REAP n`: how many expired leases go back first (the native
-- command's emq.reap-on-claim). Reply: {lane, deadline, job...} or {}.
if #KEYS ~= 1 or #ARGV < 2 then
  return redis.error_reply("ERR wrong number of arguments for 'emq.wclaim' command")
end
if ARGV[1] == '' then return redis.error_reply('ERR the prefix must not be empty') end
if not string.match(ARGV[2], '^[1-9]%d*$') or tonumber(ARGV[2]) > 1099511627776 then
  return redis.error_reply('ERR lease must be an integer from 1 to 1099511627776')
end
set_prefix(ARGV[1])
reap_first(reap_bound(3, 'wclaim'))
-- The seed's first half, its lines as they are; the lines SPEC section 2
-- adds between them end in `--+` (a damaged lane returns {} after the
-- seed's LMOVE: it was rotated, untouched).
local g = redis.call('LMOVE', KEYS[1], KEYS[1], 'LEFT', 'RIGHT')
if not g then return {} end
if g == '' then return drop(KEYS[1], g) end --+ an empty name is never served
local lane = ARGV[1] .. 'g:' .. g .. ':pending'
if not zset_or_none(lane) then return {} end --+ damaged: skipped
local depth = redis.call('ZCARD', lane)
if depth == 0 then
  redis.call('LREM', KEYS[1], 0, g)
  return {}
end
if redis.call('SISMEMBER', ARGV[1] .. 'gpaused', g) == 1 then return drop(KEYS[1], g) end --+
if not sound(redis.call('HGET', ARGV[1] .. 'gweight', g)) then return {} end --+ damaged: skipped
local w = tonumber(redis.call('HGET', ARGV[1] .. 'gweight', g) or '1')
if w < 1 then w = 1 end
local k = w
if depth < k then k = depth end
local lim = redis.call('HGET', ARGV[1] .. 'glimit', g)
if not sound(lim) then return {} end --+ damaged: skipped
local cur = redis.call('HGET', ARGV[1] .. 'gactive', g) --+ read even without a ceiling
if not sound(cur, 0) then return {} end --+ damaged (a negative count too): skipped
if lim then
  local cur = tonumber(redis.call('HGET', ARGV[1] .. 'gactive', g) or '0')
  local headroom = tonumber(lim) - cur
  if headroom < k then k = headroom end
end
-- The second half (SPEC section 2).
return lease_heads(ARGV[1], KEYS[1], g, lane, depth, k, lim, cur, ARGV[2])
