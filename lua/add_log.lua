-- EMQ.LOG's twin: EchoMQ's @add_log (EchoMQ.Jobs.add_log/5).
-- KEYS: row, row .. ':logs'. ARGV: line, keep ('' for all).
-- The line appended; the last keep lines kept. Reply: the lines there, or
-- -1 when the row is gone.
if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
local n = redis.call('RPUSH', KEYS[2], ARGV[1])
if ARGV[2] ~= '' then
  local keep = tonumber(ARGV[2])
  redis.call('LTRIM', KEYS[2], -keep, -1)
  if keep < n then return keep end
end
return n
