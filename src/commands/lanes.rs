//! Per-lane settings and moves: EMQ.WEIGHT, EMQ.LIMIT, EMQ.PAUSE,
//! EMQ.RESUME, EMQ.REASSIGN, and the read-only EMQ.LANE. Every change that
//! can alter a lane's serviceability reads the lane before and after and
//! lets the ring follow (`schedule::ring_change`); none scans the ring.

use crate::args;
use crate::errors::{Error, LIMIT_RANGE, WEIGHT_RANGE};
use crate::keys;
use crate::schedule::{effective_weight, ring_change, Lane};
use crate::state::{self, Queue};
use crate::store::{Arg, Argv, Class, Ctx, KeyRead, Kind};

/// `EMQ.WEIGHT P lane weight`: one `HSET P gweight lane weight`. A weight
/// never changes serviceability, so the ring is not touched.
pub fn weight(ctx: &Ctx, argv: Argv) -> Result<(), Error> {
    let (q, lane) = lane_command(ctx, argv, 4)?;
    let weight = argv.get(3);
    args::int_in(weight.bytes(), "weight", 1, i64::MAX, WEIGHT_RANGE)?;
    let weight_key = q.key(keys::WEIGHT);
    state::expect_kind(ctx, &weight_key, Kind::Hash)?;

    let hash = ctx.open_write(&weight_key);
    hash.hash_set(lane, weight);
    ctx.notify(&hash, Class::Hash, c"hset");
    drop(hash);
    ctx.replicate(c"HSET", &[weight_key.as_arg(), lane, weight]);
    ctx.reply_ok();
    Ok(())
}

/// `EMQ.LIMIT P lane n | NONE`: sets or removes the lane's ceiling.
pub fn limit(ctx: &Ctx, argv: Argv) -> Result<(), Error> {
    let (q, lane) = lane_command(ctx, argv, 4)?;
    let arg = argv.get(3);
    let limit = if args::is_keyword(arg.bytes(), "NONE") {
        None
    } else {
        Some(args::int_in(arg.bytes(), "limit", 1, i64::MAX, LIMIT_RANGE)?)
    };
    q.check_ring()?;
    let before = q.lane(lane)?;

    let limit_key = q.key(keys::LIMIT);
    let hash = ctx.open_write(&limit_key);
    match limit {
        Some(_) => {
            hash.hash_set(lane, arg);
            ctx.notify(&hash, Class::Hash, c"hset");
            ctx.replicate(c"HSET", &[limit_key.as_arg(), lane, arg]);
        }
        None => {
            hash.hash_del(lane);
            ctx.notify(&hash, Class::Hash, c"hdel");
            ctx.replicate(c"HDEL", &[limit_key.as_arg(), lane]);
        }
    }
    drop(hash);
    q.follow(lane, ring_change(&before, &Lane { limit, ..before }));
    ctx.reply_ok();
    Ok(())
}

/// `EMQ.PAUSE P lane`: takes the lane out of service. Reply 1 if it was not
/// paused, else 0.
pub fn pause(ctx: &Ctx, argv: Argv) -> Result<(), Error> {
    set_paused(ctx, argv, true)
}

/// `EMQ.RESUME P lane`: puts a paused lane back in service. Reply 1 if it was
/// paused, else 0.
pub fn resume(ctx: &Ctx, argv: Argv) -> Result<(), Error> {
    set_paused(ctx, argv, false)
}

fn set_paused(ctx: &Ctx, argv: Argv, paused: bool) -> Result<(), Error> {
    let (q, lane) = lane_command(ctx, argv, 3)?;
    q.check_ring()?;
    let before = q.lane(lane)?;
    if before.paused == paused {
        ctx.reply_i64(0);
        return Ok(());
    }
    let paused_key = q.key(keys::PAUSED);
    let cmd = if paused { c"SADD" } else { c"SREM" };
    ctx.set_call(cmd, &paused_key, lane);
    ctx.replicate(cmd, &[paused_key.as_arg(), lane]);
    q.follow(lane, ring_change(&before, &Lane { paused, ..before }));
    ctx.reply_i64(1);
    Ok(())
}

/// `EMQ.REASSIGN P job from to`: moves a pending job to another lane at the
/// same mint score. Reply 1 if moved, 0 if it was not pending in `from` or
/// `from == to`.
pub fn reassign(ctx: &Ctx, argv: Argv) -> Result<(), Error> {
    if argv.len() != 5 {
        return Err(Error::WrongArity);
    }
    let prefix = args::prefix(argv.get(1).bytes(), ctx.is_cluster())?;
    let (job, from, to) = (argv.get(2), argv.get(3), argv.get(4));
    args::lane(from.bytes())?;
    args::lane(to.bytes())?;
    let q = Queue::new(ctx, prefix);
    q.check_ring()?;
    let before_from = q.lane(from)?;
    let before_to = q.lane(to)?;
    let from_key = q.pending(from.bytes());
    let mint = ctx.open_read(&from_key).and_then(|z| z.zset_score(job));
    let Some(mint) = mint.filter(|_| from.bytes() != to.bytes()) else {
        ctx.reply_i64(0);
        return Ok(());
    };

    let to_key = q.pending(to.bytes());
    let from_zset = ctx.open_write(&from_key);
    from_zset.zset_rem(job);
    ctx.notify(&from_zset, Class::Zset, c"zrem");
    drop(from_zset);
    let to_zset = ctx.open_write(&to_key);
    to_zset.zset_add(mint, job, false);
    ctx.notify(&to_zset, Class::Zset, c"zadd");
    drop(to_zset);
    let mint_text = ctx.format_score(mint);
    ctx.replicate(c"ZREM", &[from_key.as_arg(), job]);
    ctx.replicate(c"ZADD", &[to_key.as_arg(), mint_text.as_arg(), job]);
    for (lane, key, before) in [(from, &from_key, before_from), (to, &to_key, before_to)] {
        let depth = ctx.len_of(key);
        q.follow(lane, ring_change(&before, &Lane { depth, ..before }));
    }
    ctx.reply_i64(1);
    Ok(())
}

/// `EMQ.LANE P lane`: depth, active, weight, limit (nil when none), paused
/// and ringed, as a map (RESP3) or a flat field/value array (RESP2).
pub fn lane(ctx: &Ctx, argv: Argv) -> Result<(), Error> {
    let (q, lane) = lane_command(ctx, argv, 3)?;
    let state = q.lane(lane)?;
    let weight = effective_weight(state::stored_int(
        ctx,
        &q.key(keys::WEIGHT),
        lane,
        "weight of lane",
    )?);
    let ring_key = q.key(keys::RING);
    let ringed = match ctx.kind_of(&ring_key) {
        Kind::Empty => false,
        Kind::List => ctx.list_contains(&ring_key, lane),
        _ => return Err(Error::WrongType),
    };
    ctx.reply_map(6);
    for (field, value) in [
        ("depth", Some(state.depth as i64)),
        ("active", Some(state.active)),
        ("weight", Some(weight)),
        ("limit", state.limit),
        ("paused", Some(i64::from(state.paused))),
        ("ringed", Some(i64::from(ringed))),
    ] {
        ctx.reply_bytes(field.as_bytes());
        match value {
            Some(v) => ctx.reply_i64(v),
            None => ctx.reply_null(),
        }
    }
    Ok(())
}

/// The shape `EMQ.X P lane …` with exactly `argc` arguments: the queue and
/// the (non-empty) lane.
fn lane_command<'a>(ctx: &'a Ctx, argv: Argv<'a>, argc: usize) -> Result<(Queue<'a>, Arg<'a>), Error> {
    if argv.len() != argc {
        return Err(Error::WrongArity);
    }
    let prefix = args::prefix(argv.get(1).bytes(), ctx.is_cluster())?;
    let lane = argv.get(2);
    args::lane(lane.bytes())?;
    Ok((Queue::new(ctx, prefix), lane))
}
