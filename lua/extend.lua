-- EMQ.EXTEND's twin (after shared.lua). ARGV = token, lease, job [, job ...]
arity(#ARGV >= 3, 'extend')
local token = ARGV[1]
if not is_int(token) then fail('ERR token must be an integer') end
if not string.match(ARGV[2], '^[1-9]%d*$') or tonumber(ARGV[2]) > 1099511627776 then
  fail('ERR lease must be an integer from 1 to 1099511627776')
end
redis.call('ZCARD', LEASES)
local deadline = math.max(tonumber(token), now_ms() + tonumber(ARGV[2]))
local seen, n = {}, 0
for i = 3, #ARGV do
  local job = ARGV[i]
  if not seen[job] then
    seen[job] = true
    local s = redis.call('ZSCORE', LEASES, job)
    if s and tonumber(s) == tonumber(token) then
      redis.call('ZADD', LEASES, deadline, job)
      n = n + 1
    end
  end
end
return {deadline, n}
