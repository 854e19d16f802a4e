//! Per-lane settings and moves: EMQ.WEIGHT, EMQ.LIMIT, EMQ.PAUSE,
//! EMQ.RESUME, EMQ.REASSIGN, and the read-only EMQ.LANE. Every change that
//! can alter a lane's serviceability reads the lane before and after and
//! lets the ring follow (`schedule::ring_change`); none scans the ring.

use crate::args::{self, Args};
use crate::errors::{Error, LIMIT_RANGE, WEIGHT_RANGE};
use crate::ffi::{Arg, Argv, Class, Reply};
use crate::queue::{stored_int, Queue};
use crate::schedule::{effective_weight, ring_change, Lane};

use super::Call;

/// `EMQ.WEIGHT P lane weight`: one `HSET P gweight lane weight`. A weight
/// never changes serviceability, so the ring is not touched.
pub fn weight<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 3, 3)?;
    let prefix = args.prefix(call.ctx.is_cluster())?;
    let lane = args.lane()?;
    let weight = args.arg()?;
    args::int_in(weight.bytes(), "weight", 1, i64::MAX, WEIGHT_RANGE)?;
    let q = Queue::new(call, prefix);
    let hash = q.weights()?;
    hash.hash_set(lane, weight);
    hash.notify(Class::Hash, c"hset");
    call.repl.effect(c"HSET", &[hash.name(), lane, weight]);
    // A damaged weight just mended: the lane, skipped until now, may serve.
    q.wake_waiters();
    Ok(Reply::Ok)
}

/// `EMQ.LIMIT P lane n | NONE`: sets or removes the lane's ceiling.
pub fn limit<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 3, 3)?;
    let prefix = args.prefix(call.ctx.is_cluster())?;
    let lane = args.lane()?;
    let arg = args.arg()?;
    let limit = if args::is_keyword(arg.bytes(), "NONE") {
        None
    } else {
        Some(args::int_in(arg.bytes(), "limit", 1, i64::MAX, LIMIT_RANGE)?)
    };
    let q = Queue::new(call, prefix);
    q.ring()?;
    let hash = q.limits()?;
    // A damaged ceiling is what an operator sets a new one to fix: it is
    // replaced, and the ring then follows the lane's new state alone.
    let old = stored_int(hash, lane, "limit of lane");
    let before = q.lane_with_limit(lane, old.clone().unwrap_or(None))?;
    match limit {
        Some(_) => {
            hash.hash_set(lane, arg);
            hash.notify(Class::Hash, c"hset");
            call.repl.effect(c"HSET", &[hash.name(), lane, arg]);
        }
        None if hash.hash_has(lane) => {
            hash.hash_del(lane);
            hash.notify(Class::Hash, c"hdel");
            call.repl.effect(c"HDEL", &[hash.name(), lane]);
        }
        None => {}
    }
    let after = Lane { limit, ..before };
    match old {
        Ok(_) => q.follow(lane, ring_change(&before, &after))?,
        Err(_) => q.settle(lane, after.serviceable())?,
    }
    q.wake_waiters();
    Ok(Reply::Ok)
}

/// `EMQ.PAUSE P lane`: takes the lane out of service. Reply 1 if it was not
/// paused, else 0.
pub fn pause<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    set_paused(call, argv, true)
}

/// `EMQ.RESUME P lane`: puts a paused lane back in service. Reply 1 if it was
/// paused, else 0.
pub fn resume<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    set_paused(call, argv, false)
}

fn set_paused<'a>(call: &Call, argv: Argv<'a>, paused: bool) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 2, 2)?;
    let prefix = args.prefix(call.ctx.is_cluster())?;
    let lane = args.lane()?;
    let q = Queue::new(call, prefix);
    q.ring()?;
    let before = q.lane(lane)?;
    if before.paused == paused {
        return Ok(Reply::Int(0));
    }
    let name = q.paused_key()?;
    let cmd = if paused { c"SADD" } else { c"SREM" };
    call.ctx.set_call(cmd, name.as_arg(), lane)?;
    call.repl.effect(cmd, &[name.as_arg(), lane]);
    q.follow(lane, ring_change(&before, &Lane { paused, ..before }))?;
    Ok(Reply::Int(1))
}

/// `EMQ.REASSIGN P job from to`: moves a pending job to another lane at the
/// same mint score. Reply 1 if moved, 0 if it was not pending in `from` or
/// `from == to`.
pub fn reassign<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 4, 4)?;
    let prefix = args.prefix(call.ctx.is_cluster())?;
    let job = args.arg()?;
    let from = args.lane()?;
    let to = args.lane()?;
    let q = Queue::new(call, prefix);
    q.ring()?;
    let before_from = q.lane(from)?;
    let before_to = q.lane(to)?;
    let from_zset = q.pending_zset(from.bytes())?;
    let to_zset = q.pending_zset(to.bytes())?;
    let mint = from_zset.zset_score(job);
    let Some(mint) = mint.filter(|_| from.bytes() != to.bytes()) else {
        return Ok(Reply::Int(0));
    };
    from_zset.zset_rem(job);
    from_zset.notify(Class::Zset, c"zrem");
    to_zset.zset_add(mint, job, false);
    to_zset.notify(Class::Zset, c"zadd");
    let mint_text = crate::record::score_text(call.ctx, mint);
    call.repl.effect(c"ZREM", &[from_zset.name(), job]);
    call.repl
        .effect(c"ZADD", &[to_zset.name(), mint_text.as_arg(), job]);
    for (lane, zset, before) in [(from, from_zset, before_from), (to, to_zset, before_to)] {
        let depth = zset.len() as u64;
        q.follow(lane, ring_change(&before, &Lane { depth, ..before }))?;
    }
    Ok(Reply::Int(1))
}

/// `EMQ.LANE P lane`: depth, active, weight, limit (nil when none), paused
/// and ringed, as a map (RESP3) or a flat field/value array (RESP2).
pub fn lane<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 2, 2)?;
    let prefix = args.prefix(call.ctx.is_cluster())?;
    let lane: Arg = args.lane()?;
    let q = Queue::new(call, prefix);
    let state = q.lane(lane)?;
    let weight = effective_weight(stored_int(q.weights()?, lane, "weight of lane")?);
    let ringed = !q.ring()?.list_positions(lane.bytes()).is_empty();
    let int = Reply::Int;
    Ok(Reply::Map(vec![
        ("depth", int(state.depth as i64)),
        ("active", int(state.active)),
        ("weight", int(weight)),
        ("limit", state.limit.map_or(Reply::Null, int)),
        ("paused", int(i64::from(state.paused))),
        ("ringed", int(i64::from(ringed))),
    ]))
}
