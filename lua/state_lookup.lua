-- EMQ.STATE's twin: EchoMQ's @state_lookup (EchoMQ.Metrics.get_job_state/3).
-- KEYS: P pending, P active, P schedule, P dead, row. ARGV: id.
-- Reply: the first set holding the job, else what its row says.
local id = ARGV[1]
if redis.call('ZSCORE', KEYS[1], id) then return 'pending' end
if redis.call('ZSCORE', KEYS[2], id) then return 'active' end
if redis.call('ZSCORE', KEYS[3], id) then return 'scheduled' end
if redis.call('ZSCORE', KEYS[4], id) then return 'dead' end
local state = redis.call('HGET', KEYS[5], 'state')
if state == 'awaiting_children' then return 'awaiting_children' end
if state then return 'unknown' end
return 'absent'
