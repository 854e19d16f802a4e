-- EMQ.WEIGHT's Lua twin (the seed's @gweight): one HSET.
-- KEYS[1] = P, ARGV[1] = lane, ARGV[2] = weight (integer >= 1). Reply: OK.
if #KEYS ~= 1 or #ARGV ~= 2 then
  return redis.error_reply("ERR wrong number of arguments for 'emq.weight' command")
end
if KEYS[1] == '' then return redis.error_reply('ERR the prefix must not be empty') end
if ARGV[1] == '' then return redis.error_reply('ERR the lane must not be empty') end
local w = ARGV[2]
if not string.match(w, '^[1-9]%d*$') or #w > 19 or (#w == 19 and w > '9223372036854775807') then
  return redis.error_reply('ERR weight must be an integer >= 1')
end
redis.call('HSET', KEYS[1] .. 'gweight', ARGV[1], w)
return redis.status_reply('OK')
