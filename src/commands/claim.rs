//! EMQ.CLAIM and EMQ.WCLAIM: one rota step, then `K = min(weight, depth,
//! headroom)` heads of the rotated lane, leased under one deadline.
//!
//! What a turn does to the keyspace (the same as the seed's `@gwclaim` and
//! `lua/wclaim.lua`):
//! - ring empty: nothing;
//! - [`Turn::Drop`]: the head lane leaves the ring (rotate + remove = pop head);
//! - [`Turn::Serve`]: the ring rotates one step; the K lowest-scored pending
//!   jobs move to `P leases` (score = deadline) and `P jlease`
//!   (`"<mint> <lane>"`); `gactive[lane] += K`; if the guard says so, the lane
//!   (now the ring's tail) leaves the ring.
//!
//! Every read and type check happens before the first write.

use crate::args;
use crate::errors::{Error, TIMEOUT_RANGE};
use crate::keys;
use crate::schedule::{self, Lane, Turn};
use crate::state;
use crate::stats;
use std::io::Write as _;

use crate::store::{self, Argv, Class, Ctx, KeyRead, Kind, RStr, Word, WriteKey};

/// `EMQ.CLAIM P lease [BLOCK ms]`: plain rotation, the weight taken as 1.
pub fn claim(ctx: &Ctx, argv: Argv) -> Result<(), Error> {
    command(ctx, argv, false)
}

/// `EMQ.WCLAIM P lease [BLOCK ms]`: the weighted rotation.
pub fn wclaim(ctx: &Ctx, argv: Argv) -> Result<(), Error> {
    command(ctx, argv, true)
}

/// What one attempt at a turn came to. Only `Served` has replied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    Served,
    /// The head lane could not be served and left the ring.
    Dropped,
    /// No ring: nothing can be served now.
    Empty,
}

/// The arguments: prefix, lease, and the BLOCK timeout in ms (0 = forever).
fn parse<'a>(ctx: &Ctx, argv: Argv<'a>) -> Result<(&'a [u8], i64, Option<i64>), Error> {
    if argv.len() != 3 && argv.len() != 5 {
        return Err(Error::WrongArity);
    }
    let prefix = args::prefix(argv.get(1).bytes(), ctx.is_cluster())?;
    let lease = args::lease(argv.get(2).bytes())?;
    let block = if argv.len() == 5 {
        if !args::is_keyword(argv.get(3).bytes(), "BLOCK") {
            return Err(Error::Syntax);
        }
        Some(args::int_in(
            argv.get(4).bytes(),
            "BLOCK timeout",
            0,
            i64::MAX,
            TIMEOUT_RANGE,
        )?)
    } else {
        None
    };
    Ok((prefix, lease, block))
}

fn command(ctx: &Ctx, argv: Argv, weighted: bool) -> Result<(), Error> {
    let (prefix, lease, block) = parse(ctx, argv)?;
    // Inside MULTI or a script a call never blocks: it is the plain call.
    let block = block.filter(|_| !ctx.in_transaction_or_script());
    let Some(timeout) = block else {
        if turn(ctx, prefix, lease, weighted)? != Outcome::Served {
            stats::CLAIMS_EMPTY.add(1);
            ctx.reply_empty_array();
        }
        return Ok(());
    };
    if serve_or_wait(ctx, prefix, lease, weighted)? {
        return Ok(());
    }
    // Nothing serviceable: wait on the ring, woken when a lane joins it.
    let ring_name = ctx.string(&keys::key(prefix, keys::RING));
    stats::BLOCKED.add(1);
    ctx.block_on_key(&ring_name, timeout, super::blocked_claim_callbacks(weighted));
    Ok(())
}

/// Turns until one serves (true) or the ring is empty (false): a lane that
/// cannot be served leaves the ring, so a client waits only when no lane is
/// serviceable.
fn serve_or_wait(ctx: &Ctx, prefix: &[u8], lease: i64, weighted: bool) -> Result<bool, Error> {
    loop {
        match turn(ctx, prefix, lease, weighted)? {
            Outcome::Served => return Ok(true),
            Outcome::Dropped => continue,
            Outcome::Empty => return Ok(false),
        }
    }
}

/// A blocked claim's ring became ready: claim once; `Ok(false)` keeps the
/// client waiting (another client took the lane).
pub fn on_ready(ctx: &Ctx, argv: Argv, weighted: bool) -> Result<bool, Error> {
    let (prefix, lease, _) = parse(ctx, argv)?;
    serve_or_wait(ctx, prefix, lease, weighted)
}

/// One turn. Replies only when it serves.
fn turn(ctx: &Ctx, prefix: &[u8], lease: i64, weighted: bool) -> Result<Outcome, Error> {
    // ---- read phase: each key opened once; the ones that may be written
    // are opened for writing (signalled modified only if written) ----
    let ring_name = ctx.string(&keys::key(prefix, keys::RING));
    let ring = ctx.open_write(&ring_name);
    ring.kind().expect(Kind::List)?;
    let Some(lane_name) = ring.list_get(0) else {
        return Ok(Outcome::Empty);
    };
    let ring_len = ring.len();
    let lane = lane_name.bytes();
    let pending_name = ctx.string(&keys::pending(prefix, lane));
    let pending = ctx.open_write(&pending_name);
    pending.kind().expect(Kind::Zset)?;
    let depth = pending.len() as u64;
    if depth == 0 {
        return Ok(drop_head(ctx, &ring));
    }
    let weight = if weighted {
        let weight_name = ctx.string(&keys::key(prefix, keys::WEIGHT));
        let stored = state::stored_int(ctx, &weight_name, lane_name.as_arg(), "weight of lane")?;
        // emq.max-claim caps a turn: the one place native may serve fewer than Lua.
        schedule::effective_weight(stored).min(stats::max_claim())
    } else {
        1
    };
    let limit_name = ctx.string(&keys::key(prefix, keys::LIMIT));
    let limit = state::stored_int(ctx, &limit_name, lane_name.as_arg(), "limit of lane")?;
    let active_name = ctx.string(&keys::key(prefix, keys::ACTIVE));
    let active_hash = ctx.open_write(&active_name);
    let active = state::int_field(
        &active_hash,
        &active_name,
        lane_name.as_arg(),
        "active count of lane",
    )?
    .unwrap_or(0);
    let before = Lane {
        depth,
        active,
        limit,
        paused: false,
    };
    let (k, leaves_ring) = match schedule::claim_turn(weight, &before) {
        Turn::Drop => return Ok(drop_head(ctx, &ring)),
        Turn::Serve { k, leaves_ring } => (k, leaves_ring),
    };
    let new_active = active.checked_add(k).ok_or_else(|| Error::Overflow {
        what: "active count of lane",
        field: lane.to_vec(),
        key: active_name.bytes().to_vec(),
    })?;
    let leases_name = ctx.string(&keys::key(prefix, keys::LEASES));
    let leases = ctx.open_write(&leases_name);
    leases.kind().expect(Kind::Zset)?;
    let jlease_name = ctx.string(&keys::key(prefix, keys::JLEASE));
    let jlease = ctx.open_write(&jlease_name);
    jlease.kind().expect(Kind::Hash)?;
    let deadline = ctx.now_ms() + lease;

    // ---- write phase: nothing below can fail ----
    if ring_len > 1 {
        if let Some(head) = ring.list_pop_head() {
            ring.list_push_tail(head.as_arg());
        }
        let (left, right) = (store::word(Word::Left), store::word(Word::Right));
        ctx.replicate(c"LMOVE", &[ring_name.as_arg(), ring_name.as_arg(), left, right]);
    } else {
        // A one-element ring is left as it is (popping it would delete the
        // key), but it was rotated, as LMOVE would: WATCH sees it.
        ring.touch();
    }
    // What LMOVE with source = destination fires.
    ctx.notify(&ring, Class::List, c"lpop");
    ctx.notify(&ring, Class::List, c"rpush");

    let jobs = pending.zset_head(k as usize);
    for (job, _) in &jobs {
        pending.zset_rem(job.as_arg());
    }
    ctx.notify(&pending, Class::Zset, c"zpopmin");

    let deadline_str = ctx.string_from_i64(deadline);
    let mut records: Vec<RStr> = Vec::with_capacity(jobs.len());
    for (job, mint) in &jobs {
        leases.zset_add(deadline as f64, job.as_arg(), false);
        let record = lease_record(ctx, *mint, lane);
        jlease.hash_set(job.as_arg(), record.as_arg());
        records.push(record);
    }
    ctx.notify(&leases, Class::Zset, c"zadd");
    ctx.notify(&jlease, Class::Hash, c"hset");

    let new_active_str = ctx.string_from_i64(new_active);
    active_hash.hash_set(lane_name.as_arg(), new_active_str.as_arg());
    ctx.notify(&active_hash, Class::Hash, c"hincrby");
    if leaves_ring {
        // The lane was just rotated to the tail: removing it is O(1).
        ring.list_pop_tail();
        ctx.notify(&ring, Class::List, c"lrem");
    }

    // ---- replication: the effects, with the deadline as a value ----
    let mut zrem = vec![pending_name.as_arg()];
    let mut zadd = vec![leases_name.as_arg()];
    let mut hset = vec![jlease_name.as_arg()];
    for ((job, _), record) in jobs.iter().zip(&records) {
        zrem.push(job.as_arg());
        zadd.push(deadline_str.as_arg());
        zadd.push(job.as_arg());
        hset.push(job.as_arg());
        hset.push(record.as_arg());
    }
    ctx.replicate(c"ZREM", &zrem);
    ctx.replicate(c"ZADD", &zadd);
    ctx.replicate(c"HSET", &hset);
    ctx.replicate(
        c"HSET",
        &[active_name.as_arg(), lane_name.as_arg(), new_active_str.as_arg()],
    );
    if leaves_ring {
        ctx.replicate(c"RPOP", &[ring_name.as_arg()]);
    }

    stats::CLAIMS.add(1);
    stats::JOBS_CLAIMED.add(jobs.len() as u64);
    ctx.reply_array(2 + jobs.len());
    ctx.reply_str(lane_name.as_arg());
    ctx.reply_i64(deadline);
    for (job, _) in &jobs {
        ctx.reply_str(job.as_arg());
    }
    Ok(Outcome::Served)
}

/// The head lane cannot be served: it leaves the ring, nothing is served.
/// (The seed rotates it to the tail and `LREM`s it: the same as a head pop.)
fn drop_head(ctx: &Ctx, ring: &WriteKey) -> Outcome {
    ring.list_pop_head();
    ctx.notify(ring, Class::List, c"lrem");
    ctx.replicate(c"LPOP", &[ring.name()]);
    Outcome::Dropped
}

/// `P jlease`'s value for a leased job: `"<mint> <lane>"`, the mint formatted
/// as the server formats a zset score.
fn lease_record(ctx: &Ctx, mint: f64, lane: &[u8]) -> RStr {
    let mut v = Vec::with_capacity(24 + lane.len());
    match store::integer_score(mint) {
        Some(int) => {
            let _ = write!(v, "{int}");
        }
        None => v.extend_from_slice(ctx.format_score(mint).bytes()),
    }
    v.push(b' ');
    v.extend_from_slice(lane);
    ctx.string(&v)
}
