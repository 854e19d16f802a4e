-- shared.lua: what the twins share. Every twin but weight.lua is this file
-- followed by its own (tests/common and benches load them so).
-- KEYS[1] = P; wclaim.lua, which keeps the seed's convention (KEYS[1] is the
-- ring, ARGV[1] the prefix), sets the prefix itself. Helpers raise errors as
-- {err = ...} tables.
local P, RING, ACTIVE, LIMIT, PAUSED, LEASES, JLEASE, WEIGHT
local JRETURNS, DEAD, JDEAD, POLICY
local function set_prefix(p)
  P = p
  RING, ACTIVE, LIMIT, PAUSED = p .. 'gring', p .. 'gactive', p .. 'glimit', p .. 'gpaused'
  LEASES, JLEASE, WEIGHT = p .. 'leases', p .. 'jlease', p .. 'gweight'
  JRETURNS, DEAD, JDEAD, POLICY = p .. 'jreturns', p .. 'dead', p .. 'jdead', p .. 'policy'
end
set_prefix(KEYS[1] or '')

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

-- The optional `COUNT n` of REAP and DEAD (default 100).
local function count_option()
  if #ARGV == 2 and string.upper(ARGV[1]) == 'COUNT' then
    local n = ARGV[2]
    if not is_int(n) or tonumber(n) < 1 then fail('ERR COUNT must be an integer >= 1') end
    return n
  elseif #ARGV ~= 0 then
    fail('ERR syntax error')
  end
  return '100'
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- "<mint> <lane>" -> mint, lane: nothing when the record has no space or an
-- empty part; the lane alone when ZADD would refuse the mint (damaged either
-- way: its lease is only dropped, its lane's count drops).
local function parse_record(rec)
  local sp = string.find(rec, ' ', 1, true)
  if not sp then return end
  local mint, lane = string.sub(rec, 1, sp - 1), string.sub(rec, sp + 1)
  if lane == '' or mint == '' then return end
  if not is_float(mint) then return nil, lane end
  return mint, lane
end

-- The queue's max-deliveries (nil: no limit).
local function max_deliveries()
  local v = redis.call('HGET', POLICY, 'max-deliveries')
  if not v then return nil end
  if not (is_int(v) and tonumber(v) >= 1) then
    fail("ERR setting 'max-deliveries' in " .. quote(POLICY) .. ' is not an integer >= 1')
  end
  return tonumber(v)
end

-- A leased job's item {job, mint, lane, record}: mint nil when the record is
-- missing or damaged (the lease is then only dropped), lane nil when it
-- names none.
local function read_item(job)
  local rec = redis.call('HGET', JLEASE, job)
  if not rec then return {job} end
  local mint, lane = parse_record(rec)
  return {job, mint, lane, rec}
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

-- Ends the leases of items, at most limit of them. ending 'ack': completed;
-- 'return': back to pending at the mint score, the return counted in
-- jreturns — or, when that count reaches max-deliveries, dead (P dead, score
-- now; P jdead). gactive drops per lane; the ring follows. A lane whose
-- state is damaged fails the call when a sound record names it — or, with
-- return_jobs (or for dropped leases only), its jobs go back all the same,
-- its count drops only if it is a number >= 0 and its ring is left as it is;
-- a lane whose pending key holds another type gets its returned jobs dead.
-- A negative count is damage: left as it is. Returns the items ended.
local function release(items, ending, return_jobs, limit)
  redis.call('HLEN', JRETURNS)
  local max = nil
  if ending == 'return' then
    if return_jobs and redis.call('TYPE', POLICY)['ok'] == 'hash' then
      local ok, m = pcall(max_deliveries) -- a damaged setting: no job dies of these returns
      if ok then max = m end
    else
      max = max_deliveries()
    end
  end
  local states, unreachable, damaged = {}, {}, {}
  for _, it in ipairs(items) do
    if it[3] then redis.call('LLEN', RING); redis.call('HLEN', ACTIVE); redis.call('HLEN', LIMIT) break end
  end
  for _, it in ipairs(items) do
    local lane = it[3]
    if lane and states[lane] == nil and not damaged[lane] then
      local must_be_sound = false
      if not return_jobs then
        for _, other in ipairs(items) do
          if other[3] == lane and other[2] then must_be_sound = true end
        end
      end
      local ok, state = pcall(lane_state, lane)
      if ok and state.active >= 0 then
        states[lane] = state
      elseif ok then
        damaged[lane] = {active_sound = false} -- a negative count: damage
      elseif not must_be_sound then
        redis.call('SISMEMBER', PAUSED, lane) -- P gpaused of another type: the queue's damage
        damaged[lane] = {active_sound = sound(redis.call('HGET', ACTIVE, lane), 0)}
        if not zset_or_none(pending(lane)) then unreachable[lane] = true end
      else
        error(state)
      end
    end
  end
  local kept, counts, order = {}, {}, {}
  for _, it in ipairs(items) do
    local lane = it[3]
    if #kept < limit then
      kept[#kept + 1] = it
      if lane then
        if not counts[lane] then counts[lane] = 0; order[#order + 1] = lane end
        counts[lane] = counts[lane] + 1
        if ending == 'return' and it[2] then
          local r = redis.call('HGET', JRETURNS, it[1])
          it.returns = ((r and is_int(r) and tonumber(r) >= 0) and tonumber(r) or 0) + 1
          it.dies = (max ~= nil and it.returns >= max) or unreachable[lane] == true
        end
      end
    end
  end
  local dying = false
  for _, it in ipairs(kept) do if it.dies then dying = true end end
  if dying then redis.call('ZCARD', DEAD); redis.call('HLEN', JDEAD) end
  local now = now_ms()
  for _, it in ipairs(kept) do
    redis.call('ZREM', LEASES, it[1])
    redis.call('HDEL', JLEASE, it[1]) -- a damaged record goes too
    if it[2] then
      if ending == 'return' and not it.dies then
        redis.call('HSET', JRETURNS, it[1], it.returns)
        redis.call('ZADD', pending(it[3]), it[2], it[1])
      else
        redis.call('HDEL', JRETURNS, it[1])
        if it.dies then
          redis.call('ZADD', DEAD, now, it[1])
          redis.call('HSET', JDEAD, it[1], it[4])
        end
      end
    end
  end
  for _, lane in ipairs(order) do
    if states[lane] or damaged[lane].active_sound then
      if redis.call('HINCRBY', ACTIVE, lane, -counts[lane]) <= 0 then redis.call('HDEL', ACTIVE, lane) end
    end
    if states[lane] then follow(lane, serviceable(states[lane])) end
  end
  return kept
end

-- Expired leases (deadline <= now), earliest first, at most limit of them
-- ended as returns; look: how many expired leases to look at.
local function reap_expired(limit, look, return_jobs)
  local jobs = redis.call('ZRANGEBYSCORE', LEASES, '-inf', now_ms(), 'LIMIT', 0, look)
  local items = {}
  for i, job in ipairs(jobs) do items[i] = read_item(job) end
  local ended = release(items, 'return', return_jobs, limit)
  local ids = {}
  for i, it in ipairs(ended) do ids[i] = it[1] end
  return ids
end

-- The item of a job leased under token, or nil.
local function leased_under(job, token)
  local s = redis.call('ZSCORE', LEASES, job)
  if s and tonumber(s) == tonumber(token) then return read_item(job) end
  return nil
end

-- ACK (ending 'ack') and NACK (ending 'return'): ARGV = token, job...
local function settle(name, ending)
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
        if it[2] then settled = settled + 1 end
      end
    end
  end
  release(items, ending, false, #items)
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

-- A claim twin's optional last arguments `REAP n` (emq.reap-on-claim,
-- which the native command reads from its config): n, or 0 without them.
-- Anything else there is the arity error.
local function reap_bound(at, name)
  if #ARGV == at - 1 then return 0 end
  if #ARGV ~= at + 1 or string.upper(ARGV[at]) ~= 'REAP' or not is_int(ARGV[at + 1]) then
    fail("ERR wrong number of arguments for 'emq." .. name .. "' command")
  end
  return tonumber(ARGV[at + 1])
end
-- Expired leases first (SPEC, under EMQ.WCLAIM): at most bound of them go
-- back before the turn, a damaged lane's jobs too (see release).
local function reap_first(bound)
  if bound > 0 then reap_expired(bound, bound * 2, true) end
end

-- The rotated lane g cannot be served: it leaves the ring.
local function drop(ring, g)
  redis.call('LREM', ring, 0, g)
  return {}
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
