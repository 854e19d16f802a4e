-- EMQ.REAP's twin (after shared.lua). ARGV = [COUNT, n]
arity(true, 'reap')
local count = count_option()
redis.call('ZCARD', LEASES); redis.call('HLEN', JLEASE)
return reap_expired(tonumber(count), tonumber(count), false)
