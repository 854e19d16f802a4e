-- shared.lua: what the twins share. Every twin but weight.lua is this file
-- followed by its own (tests/common and benches load them so).
-- KEYS[1] = P (for wclaim.lua, which keeps the seed's convention, KEYS[1] is
-- the ring and its prefix is ARGV[1]: it calls only the helpers that take
-- the prefix as an argument). Helpers raise errors as {err = ...} tables.
local P = KEYS[1] or ''
local RING, ACTIVE, LIMIT, PAUSED = P .. 'gring', P .. 'gactive', P .. 'glimit', P .. 'gpaused'
local LEASES, JLEASE, WEIGHT = P .. 'leases', P .. 'jlease', P .. 'gweight'
local JDEAD = P .. 'jdead'

local function pending(lane) return P .. 'g:' .. lane .. ':pending' end
local function fail(msg) error({err = msg}) end

local function arity(ok, name)
  if not ok or #KEYS ~= 1 then fail("ERR wrong number of arguments for 'emq." .. name .. "' command") end
  if P == '' then fail('ERR the prefix must not be empty') end
end
local function check_lane(lane) if lane == '' then fail('ERR the lane must not be empty') end end

-- The server's integer grammar (string2ll), 64-bit bounds compared as text.
local function is_int(s)
  if s == '0' then return true end
  local digits = string.match(s, '^%-?([1-9]%d*)$')
  if not digits then return false end
  if #digits ~= 19 then return #digits < 19 end
  return digits <= (string.sub(s, 1, 1) == '-' and '9223372036854775808' or '9223372036854775807')
end
-- What ZADD takes as a score: a decimal float, no spaces, no NaN, no
-- overflow to infinity (only "inf" itself), no underflow to zero.
local function is_float(s)
  local v = tonumber(s)
  if v == nil or v ~= v or string.find(s, '^%s') or string.find(s, '%s$') or string.find(s, '[xX]') then
    return false
  end
  if v == math.huge or v == -math.huge then return string.find(string.lower(s), '^[+-]?inf') ~= nil end
  if v == 0 then return not string.find(string.lower(s):gsub('e.*', ''), '[1-9]') end
  return true
end
local function quote(s) return "'" .. s .. "'" end

local function stored_int(key, field, what)
  local v = redis.call('HGET', key, field)
  if not v then return nil end
  if not is_int(v) then fail('ERR ' .. what .. ' ' .. quote(field) .. ' in ' .. quote(key) .. ' is not an integer') end
  return tonumber(v)
end

local function lane_state(lane)
  return {
    depth = redis.call('ZCARD', pending(lane)),
    active = stored_int(ACTIVE, lane, 'active count of lane') or 0,
    limit = stored_int(LIMIT, lane, 'limit of lane'),
    paused = redis.call('SISMEMBER', PAUSED, lane) == 1,
  }
end
local function serviceable(s)
  return s.depth > 0 and not s.paused and (s.limit == nil or s.active < s.limit)
end
-- The ring follows the lane: RPUSH when it became serviceable, LREM when it stopped.
local function follow(lane, was)
  local now = serviceable(lane_state(lane))
  if now and not was then
    redis.call('RPUSH', RING, lane)
  elseif was and not now then
    redis.call('LREM', RING, 0, lane)
  end
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- "<mint> <lane>" -> mint, lane; nothing when the record is damaged (no
-- space, an empty lane, or a mint ZADD would refuse).
local function parse_record(rec)
  local sp = string.find(rec, ' ', 1, true)
  if not sp then return end
  local mint, lane = string.sub(rec, 1, sp - 1), string.sub(rec, sp + 1)
  if lane == '' or not is_float(mint) then return end
  return mint, lane
end

-- Releases leases {job, mint, lane} (lane nil: no record, the lease is only
-- dropped): gactive drops per lane, the ring follows; with restore the jobs
-- go back to pending at their mint scores.
local function release(items, restore)
  local counts, order = {}, {}
  for _, it in ipairs(items) do
    local lane = it[3]
    if lane then
      if not counts[lane] then counts[lane] = 0; order[#order + 1] = lane end
      counts[lane] = counts[lane] + 1
    end
  end
  local before = {}
  for _, lane in ipairs(order) do before[lane] = serviceable(lane_state(lane)) end
  if #order > 0 then redis.call('LLEN', RING) end
  for _, it in ipairs(items) do
    redis.call('ZREM', LEASES, it[1])
    redis.call('HDEL', JLEASE, it[1]) -- a damaged record goes too
    if it[3] and restore then redis.call('ZADD', pending(it[3]), it[2], it[1]) end
  end
  for _, lane in ipairs(order) do
    if redis.call('HINCRBY', ACTIVE, lane, -counts[lane]) <= 0 then redis.call('HDEL', ACTIVE, lane) end
    follow(lane, before[lane])
  end
end

-- The lease record of a job leased under token, or nil.
local function leased_under(job, token)
  local s = redis.call('ZSCORE', LEASES, job)
  if s and tonumber(s) == tonumber(token) then
    local rec = redis.call('HGET', JLEASE, job)
    if rec then return {job, parse_record(rec)} end
    return {job}
  end
  return nil
end

-- ACK (restore = false) and NACK (restore = true): ARGV = token, job...
local function settle(name, restore)
  arity(#ARGV >= 2, name)
  if not is_int(ARGV[1]) then fail('ERR token must be an integer') end
  redis.call('ZCARD', LEASES); redis.call('HLEN', JLEASE)
  local seen, items, settled = {}, {}, 0
  for i = 2, #ARGV do
    local job = ARGV[i]
    if not seen[job] then
      seen[job] = true
      local it = leased_under(job, ARGV[1])
      if it then
        items[#items + 1] = it
        if it[3] then settled = settled + 1 end
      end
    end
  end
  release(items, restore)
  return settled
end

-- PAUSE (paused = true) and RESUME (paused = false): ARGV = lane
local function set_paused(name, paused)
  arity(#ARGV == 1, name)
  local lane = ARGV[1]
  check_lane(lane)
  redis.call('LLEN', RING)
  local s = lane_state(lane)
  if s.paused == paused then return 0 end
  redis.call(paused and 'SADD' or 'SREM', PAUSED, lane)
  follow(lane, serviceable(s))
  return 1
end

-- ---- the claim turn (claim.lua, wclaim.lua) ----

-- The rotated lane g cannot be served: it leaves the ring.
local function drop(ring, g)
  redis.call('LREM', ring, 0, g)
  return {}
end
-- Whether a lane's pending key is a zset or missing (else the lane is damaged).
local function zset_or_none(key)
  local t = redis.call('TYPE', key)['ok']
  return t == 'zset' or t == 'none'
end
-- Whether a stored number is sound: absent, or an integer (>= min if given).
local function sound(v, min)
  return not v or (is_int(v) and (min == nil or tonumber(v) >= min))
end

-- The second half of a turn (SPEC section 2): lease up to k heads of lane g
-- not already leased or dead (those met on the way are removed), all under
-- one deadline; gactive grows by the number leased; the re-ring guard runs.
-- cur: the active count read before. Reply: {g, deadline, job...} or {}.
local function lease_heads(p, ring, g, lane, depth, k, lim, cur, lease)
  if k <= 0 then return drop(ring, g) end
  cur = tonumber(cur or '0')
  if cur + k >= 9223372036854775807 then return {} end -- the count would overflow: skipped
  local t = redis.call('TIME')
  local deadline = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(lease)
  local leases, jlease, jdead = p .. 'leases', p .. 'jlease', p .. 'jdead'
  local reply = {g, deadline}
  local taken, left = 0, depth
  while taken < k and left > 0 do
    local popped = redis.call('ZPOPMIN', lane, k - taken)
    for i = 1, #popped, 2 do
      left = left - 1
      local job = popped[i]
      if redis.call('HEXISTS', jlease, job) == 0 and redis.call('HEXISTS', jdead, job) == 0 then
        redis.call('ZADD', leases, deadline, job)
        redis.call('HSET', jlease, job, popped[i + 1] .. ' ' .. g)
        reply[#reply + 1] = job
        taken = taken + 1
      end
    end
  end
  local active = cur
  if taken > 0 then active = redis.call('HINCRBY', p .. 'gactive', g, taken) end
  if left == 0 or (lim and active >= tonumber(lim)) then
    redis.call('LREM', ring, 0, g)
  end
  if taken == 0 then return {} end
  return reply
end
