-- EMQ.REAP's twin (after shared.lua). ARGV = [COUNT, n]
arity(true, 'reap')
local count = '100'
if #ARGV == 2 and string.upper(ARGV[1]) == 'COUNT' then
  count = ARGV[2]
  if not is_int(count) or tonumber(count) < 1 then fail('ERR COUNT must be an integer >= 1') end
elseif #ARGV ~= 0 then
  fail('ERR syntax error')
end
redis.call('ZCARD', LEASES); redis.call('HLEN', JLEASE)
return reap_expired(tonumber(count), tonumber(count), false)
