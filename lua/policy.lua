-- EMQ.POLICY's twin (after shared.lua). ARGV = max-deliveries, n | NONE
arity(#ARGV == 2, 'policy')
if string.lower(ARGV[1]) ~= 'max-deliveries' then fail('ERR the policy setting must be max-deliveries') end
local n = ARGV[2]
if string.upper(n) == 'NONE' then
  redis.call('HDEL', POLICY, 'max-deliveries')
elseif is_int(n) and tonumber(n) >= 1 then
  redis.call('HSET', POLICY, 'max-deliveries', n)
else
  fail('ERR max-deliveries must be an integer >= 1 or NONE')
end
return redis.status_reply('OK')
