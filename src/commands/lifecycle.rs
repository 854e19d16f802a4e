//! A job's life after the claim: EMQ.ENQUEUE, EMQ.ACK, EMQ.NACK,
//! EMQ.EXTEND, EMQ.REAP.
//!
//! A lease is two entries: `P leases` (job → deadline, the token) and
//! `P jlease` (job → `"<mint> <lane>"`). ACK, NACK and REAP *release*
//! leases (`release.rs`); EXTEND moves deadlines; ENQUEUE adds pending jobs.

use crate::args::{self, Args};
use crate::errors::{Error, FLOAT, INTEGER};
use crate::ffi::{word, Arg, Argv, Class, Reply, Word};
use crate::queue::Queue;
use crate::schedule::{ring_change, Lane};
use crate::stats;

use super::release::{self, Ending, Lease};
use super::Call;

/// `EMQ.ENQUEUE P lane mint job [mint job …]`: `ZADD NX` into the lane,
/// skipping job ids that are leased or dead. Reply: the number added.
pub fn enqueue<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    if argv.len() < 5 || argv.len().is_multiple_of(2) {
        return Err(Error::WrongArity);
    }
    let mut args = Args::new(argv, 4, usize::MAX)?;
    let prefix = args.prefix(call.ctx.is_cluster())?;
    let lane = args.lane()?;
    let rest = args.rest();
    let mut pairs: Vec<(f64, Arg, Arg)> = Vec::with_capacity(rest.len() / 2);
    for pair in rest.chunks(2) {
        let mint = pair[0].to_score().ok_or_else(|| Error::bad_arg("mint", FLOAT))?;
        pairs.push((mint, pair[0], pair[1]));
    }

    let q = Queue::new(call, prefix);
    q.ring()?;
    let before = q.lane(lane)?;
    let jlease = q.jlease()?;
    let jdead = q.jdead()?;
    let pending = q.pending_zset(lane.bytes())?;

    let mut zadd = Vec::with_capacity(2 + rest.len());
    zadd.extend([pending.name(), word(Word::Nx)]);
    for (mint, text, job) in &pairs {
        let taken = jlease.hash_has(*job) || jdead.hash_has(*job);
        if !taken && pending.zset_add(*mint, *job, true) {
            zadd.extend([*text, *job]);
        }
    }
    let added = (zadd.len() as u64 - 2) / 2;
    if added > 0 {
        pending.notify(Class::Zset, c"zadd");
        call.repl.effect(c"ZADD", &zadd);
        let after = Lane {
            depth: before.depth + added,
            ..before
        };
        q.follow(lane, ring_change(&before, &after))?;
    }
    call.count(&stats::JOBS_ENQUEUED, added);
    Ok(Reply::Int(added as i64))
}

/// `EMQ.ACK P token job [job …]`: completes the jobs leased under `token`.
pub fn ack<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    settle(call, argv, Ending::Ack)
}

/// `EMQ.NACK P token job [job …]`: returns the jobs leased under `token` to
/// their lanes at their mint scores.
pub fn nack<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    settle(call, argv, Ending::Return)
}

fn settle<'a>(call: &Call, argv: Argv<'a>, ending: Ending) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 3, usize::MAX)?;
    let prefix = args.prefix(call.ctx.is_cluster())?;
    let token = token(args.arg()?)?;
    let q = Queue::new(call, prefix);
    let leases = q.leases()?;
    let jobs: Vec<Lease> = args::distinct(args.rest(), |a| a.bytes())
        .into_iter()
        .filter(|job| leased_under(leases.zset_score(*job), token))
        .map(Lease::Arg)
        .collect();
    let settled = release::release(&q, jobs, usize::MAX, ending, release::OnDamagedLane::Fail)?;
    let counter = match ending {
        Ending::Ack => &stats::JOBS_ACKED,
        _ => &stats::JOBS_NACKED,
    };
    call.count(counter, settled.settled);
    Ok(Reply::Int(settled.settled as i64))
}

/// `EMQ.EXTEND P token lease job [job …]`: moves the deadline of the jobs
/// leased under `token` to `max(token, now + lease)`. Reply `[deadline, n]`.
pub fn extend<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 4, usize::MAX)?;
    let prefix = args.prefix(call.ctx.is_cluster())?;
    let token = token(args.arg()?)?;
    let lease = args.lease()?;
    let q = Queue::new(call, prefix);
    let leases = q.leases()?;
    let deadline = token.max(call.ctx.now_ms().saturating_add(lease));
    let jobs: Vec<Arg> = args::distinct(args.rest(), |a| a.bytes())
        .into_iter()
        .filter(|job| leased_under(leases.zset_score(*job), token))
        .collect();
    // A deadline that does not move is no write (as ZADD of the same score).
    if !jobs.is_empty() && deadline != token {
        let deadline_str = call.ctx.string_from_i64(deadline);
        let mut zadd = vec![leases.name()];
        for job in &jobs {
            leases.zset_add(deadline as f64, *job, false);
            zadd.extend([deadline_str.as_arg(), *job]);
        }
        leases.notify(Class::Zset, c"zadd");
        call.repl.effect(c"ZADD", &zadd);
    }
    call.count(&stats::JOBS_EXTENDED, jobs.len() as u64);
    Ok(Reply::Array(vec![
        Reply::Int(deadline),
        Reply::Int(jobs.len() as i64),
    ]))
}

/// `EMQ.REAP P [COUNT n]`: expired leases (deadline <= now), earliest first,
/// go back to pending as NACK does. Reply: the reaped job ids (a lease whose
/// record was damaged is dropped and listed too).
pub fn reap<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 1, usize::MAX)?;
    let prefix = args.prefix(call.ctx.is_cluster())?;
    let count = args.count(100)?;
    let q = Queue::new(call, prefix);
    let reaped = release::reap_expired(&q, count, release::OnDamagedLane::Fail)?;
    call.count(&stats::JOBS_REAPED, reaped.len() as u64);
    Ok(Reply::Array(reaped.into_iter().map(Reply::Owned).collect()))
}

fn token(arg: Arg) -> Result<i64, Error> {
    crate::args::int_in(arg.bytes(), "token", i64::MIN, i64::MAX, INTEGER)
}

/// Whether a lease deadline is exactly `token`.
fn leased_under(deadline: Option<f64>, token: i64) -> bool {
    deadline.is_some_and(|score| score == token as f64 && score as i64 == token)
}
