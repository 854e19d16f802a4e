-- EMQ.CLAIM's Lua twin (after shared.lua): plain rotation (claim/3), one
-- head per turn, with the checks of SPEC section 2 (wclaim.lua's, the
-- weight not read). KEYS[1] = P, ARGV[1] = lease (ms), then optionally
-- `REAP n` (as wclaim.lua's). Reply: {lane, deadline, job} or {}.
if #KEYS ~= 1 or #ARGV < 1 then
  return redis.error_reply("ERR wrong number of arguments for 'emq.claim' command")
end
if P == '' then return redis.error_reply('ERR the prefix must not be empty') end
if not string.match(ARGV[1], '^[1-9]%d*$') or tonumber(ARGV[1]) > 1099511627776 then
  return redis.error_reply('ERR lease must be an integer from 1 to 1099511627776')
end
reap_first(reap_bound(2, 'claim'))
local g = redis.call('LMOVE', RING, RING, 'LEFT', 'RIGHT')
if not g then return {} end
if g == '' then return drop(RING, g) end
local lane = pending(g)
if not zset_or_none(lane) then return {} end -- damaged: skipped
local depth = redis.call('ZCARD', lane)
if depth == 0 or redis.call('SISMEMBER', PAUSED, g) == 1 then return drop(RING, g) end
local lim = redis.call('HGET', LIMIT, g)
local cur = redis.call('HGET', ACTIVE, g)
if not (sound(lim) and sound(cur, 0)) then return {} end -- damaged: skipped
local k = 1
if lim and tonumber(lim) - tonumber(cur or '0') < k then k = tonumber(lim) - tonumber(cur or '0') end
return lease_heads(P, RING, g, lane, depth, k, lim, cur, ARGV[1])
