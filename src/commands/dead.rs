//! Returns and dead letters: EMQ.POLICY sets how many leases a job gets,
//! EMQ.DEAD lists the jobs that used them up, EMQ.REVIVE puts them back.
//! (The deaths themselves happen where leases end: `release.rs`.)

use crate::args::{self, Args};
use crate::errors::Error;
use crate::ffi::{Arg, Argv, Class, Reply};
use crate::queue::Queue;
use crate::record;
use crate::schedule::{ring_change, Lane};
use crate::stats;

use super::Call;

const MAX_DELIVERIES: &[u8] = b"max-deliveries";

/// `EMQ.POLICY P max-deliveries n | NONE`: sets (n >= 1) or removes how many
/// leases a job gets before it dies. Reply `OK`.
pub fn policy<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 3, 3)?;
    let prefix = args.prefix(call.ctx.is_cluster())?;
    let setting = args.arg()?;
    if !args::is_keyword(setting.bytes(), "max-deliveries") {
        return Err(Error::bad_arg("the policy setting", "max-deliveries"));
    }
    let value = args.arg()?;
    let limit = if args::is_keyword(value.bytes(), "NONE") {
        None
    } else {
        Some(args::int_in(
            value.bytes(),
            "max-deliveries",
            1,
            i64::MAX,
            "an integer >= 1 or NONE",
        )?)
    };
    let q = Queue::new(call, prefix);
    let hash = q.policy()?;
    let field = call.ctx.string(MAX_DELIVERIES);
    match limit {
        Some(n) => {
            let n = call.ctx.string_from_i64(n);
            hash.hash_set(field.as_arg(), n.as_arg());
            hash.notify(Class::Hash, c"hset");
            call.repl
                .effect(c"HSET", &[hash.name(), field.as_arg(), n.as_arg()]);
        }
        None => {
            if hash.hash_has(field.as_arg()) {
                hash.hash_del(field.as_arg());
                hash.notify(Class::Hash, c"hdel");
                call.repl.effect(c"HDEL", &[hash.name(), field.as_arg()]);
            }
        }
    }
    Ok(Reply::Ok)
}

/// `EMQ.DEAD P [COUNT n]`: the oldest `n` (default 100) dead jobs, oldest
/// first, each `[job, lane, died_at]` (lane nil when its record is damaged).
pub fn dead<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 1, usize::MAX)?;
    let prefix = args.prefix(call.ctx.is_cluster())?;
    let count = args.count(100)?;
    let q = Queue::new(call, prefix);
    let dead = q.dead()?;
    let jdead = q.jdead()?;
    let rows = dead
        .zset_range(f64::INFINITY, count)
        .into_iter()
        .map(|(job, died_at)| {
            let lane = jdead
                .hash_get(job.as_arg())
                .and_then(|text| record::parse(text.bytes()).map(|r| r.lane.to_vec()))
                .map_or(Reply::Null, Reply::Bytes);
            Reply::Array(vec![Reply::Owned(job), lane, Reply::Int(died_at as i64)])
        })
        .collect();
    Ok(Reply::Array(rows))
}

/// `EMQ.REVIVE P job [job …]`: dead jobs go back to their lanes' pending
/// sets at their mint scores, with no returns counted; the lanes ring as
/// ENQUEUE would. Reply: the number revived. A job whose dead record is
/// damaged stays dead (EMQ.DEAD shows it without a lane).
pub fn revive<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 2, usize::MAX)?;
    let prefix = args.prefix(call.ctx.is_cluster())?;
    let q = Queue::new(call, prefix);
    let dead = q.dead()?;
    let jdead = q.jdead()?;
    q.ring()?;
    // ---- read: each job's lane and mint, each lane's state ----
    let mut jobs: Vec<(Arg, Vec<u8>, f64)> = Vec::new();
    for job in args::distinct(args.rest(), |a| a.bytes()) {
        let Some(text) = jdead.hash_get(job) else { continue };
        let Some(rec) = record::parse(text.bytes()) else {
            continue;
        };
        let Some(mint) = call.ctx.string(rec.mint).as_arg().to_score() else {
            continue;
        };
        jobs.push((job, rec.lane.to_vec(), mint));
    }
    let mut lanes: Vec<(Vec<u8>, Lane)> = Vec::new();
    for (_, lane, _) in &jobs {
        if !lanes.iter().any(|(l, _)| l == lane) {
            let name = call.ctx.string(lane);
            lanes.push((lane.clone(), q.lane(name.as_arg())?));
        }
    }
    // ---- write ----
    if jobs.is_empty() {
        return Ok(Reply::Int(0));
    }
    let mut zrem = vec![dead.name()];
    let mut hdel = vec![jdead.name()];
    for (job, _, _) in &jobs {
        dead.zset_rem(*job);
        jdead.hash_del(*job);
        zrem.push(*job);
        hdel.push(*job);
    }
    dead.notify(Class::Zset, c"zrem");
    jdead.notify(Class::Hash, c"hdel");
    call.repl.effect(c"ZREM", &zrem);
    call.repl.effect(c"HDEL", &hdel);
    for (lane, before) in &lanes {
        let pending = q.pending_zset(lane)?;
        let mut zadd = vec![pending.name(), crate::ffi::word(crate::ffi::Word::Nx)];
        let mut texts = Vec::new();
        for (job, _, mint) in jobs.iter().filter(|(_, l, _)| l == lane) {
            if pending.zset_add(*mint, *job, true) {
                texts.push((record::score_text(call.ctx, *mint), *job));
            }
        }
        for (text, job) in &texts {
            zadd.extend([text.as_arg(), *job]);
        }
        if !texts.is_empty() {
            pending.notify(Class::Zset, c"zadd");
            call.repl.effect(c"ZADD", &zadd);
        }
        let name = call.ctx.string(lane);
        let after = Lane {
            depth: pending.len() as u64,
            ..*before
        };
        q.follow(name.as_arg(), ring_change(before, &after))?;
    }
    call.count(&stats::JOBS_REVIVED, jobs.len() as u64);
    Ok(Reply::Int(jobs.len() as i64))
}
