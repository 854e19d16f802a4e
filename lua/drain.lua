-- EMQ.QDRAIN's twin: EchoMQ's admin @drain (EchoMQ.Admin.drain/3).
-- KEYS: base, P pending[, P schedule]. ARGV: none.
-- Every job of the sets deleted with its row and logs, and the sets.
-- Reply: the number of ids met.
local base = KEYS[1]
local n = 0
for i = 2, #KEYS do
  local ids = redis.call('ZRANGE', KEYS[i], 0, -1)
  for _, id in ipairs(ids) do
    local row = base .. 'job:' .. id
    redis.call('DEL', row, row .. ':logs')
  end
  redis.call('DEL', KEYS[i])
  n = n + #ids
end
return n
