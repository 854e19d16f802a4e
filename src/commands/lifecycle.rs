//! A job's life after the claim: EMQ.ENQUEUE, EMQ.ACK, EMQ.NACK,
//! EMQ.EXTEND, EMQ.REAP.
//!
//! A lease is two entries: `P leases` (job → deadline, the token) and
//! `P jlease` (job → `"<mint> <lane>"`). ACK, NACK and REAP all *release*
//! leases: both entries go, the lane's `gactive` drops by the number
//! released (the field is removed at 0), and the ring follows the lane's
//! serviceability; NACK and REAP also put the job back in its lane's pending
//! zset at its mint score. Releases are grouped by lane, so each lane's
//! state is read and its ring membership decided once per call.

use std::collections::HashSet;

use crate::args;
use crate::errors::{Error, COUNT_RANGE, FLOAT, INTEGER, RECORD};
use crate::keys;
use crate::schedule::{ring_change, Lane};
use crate::state::{self, Queue};
use crate::stats;
use crate::store::{self, Arg, Argv, Class, Ctx, KeyRead, Kind, RStr, ReadKey, Word};

/// `EMQ.ENQUEUE P lane mint job [mint job …]`: `ZADD NX` into the lane,
/// skipping job ids that are currently leased. Reply: the number added.
pub fn enqueue(ctx: &Ctx, argv: Argv) -> Result<(), Error> {
    if argv.len() < 5 || argv.len().is_multiple_of(2) {
        return Err(Error::WrongArity);
    }
    let prefix = args::prefix(argv.get(1).bytes(), ctx.is_cluster())?;
    let lane = argv.get(2);
    args::lane(lane.bytes())?;
    let pairs: Vec<(f64, Arg)> = (3..argv.len())
        .step_by(2)
        .map(|i| {
            let mint = argv
                .get(i)
                .to_score()
                .ok_or_else(|| Error::bad_arg("mint", FLOAT))?;
            Ok((mint, argv.get(i + 1)))
        })
        .collect::<Result<_, Error>>()?;

    let q = Queue::new(ctx, prefix);
    q.check_ring()?;
    let before = q.lane(lane)?;
    let jlease_key = q.key(keys::JLEASE);
    state::expect_kind(ctx, &jlease_key, Kind::Hash)?;
    let leased: Vec<bool> = {
        let jlease = ctx.open_read(&jlease_key);
        pairs
            .iter()
            .map(|(_, job)| jlease.as_ref().is_some_and(|h| h.hash_get(*job).is_some()))
            .collect()
    };

    let pending_key = q.pending(lane.bytes());
    let pending = ctx.open_write(&pending_key);
    let mut zadd = vec![pending_key.as_arg(), store::word(Word::Nx)];
    let mut added = 0u64;
    for (i, ((mint, job), leased)) in pairs.iter().zip(&leased).enumerate() {
        if !leased && pending.zset_add(*mint, *job, true) {
            added += 1;
            zadd.push(argv.get(3 + 2 * i));
            zadd.push(*job);
        }
    }
    if added > 0 {
        ctx.notify(&pending, Class::Zset, c"zadd");
    }
    drop(pending);
    if added > 0 {
        ctx.replicate(c"ZADD", &zadd);
        let after = Lane {
            depth: before.depth + added,
            ..before
        };
        q.follow(lane, ring_change(&before, &after));
    }
    stats::JOBS_ENQUEUED.add(added);
    ctx.reply_i64(added as i64);
    Ok(())
}

/// `EMQ.ACK P token job [job …]`: completes the jobs leased under `token`.
pub fn ack(ctx: &Ctx, argv: Argv) -> Result<(), Error> {
    settle(ctx, argv, false)
}

/// `EMQ.NACK P token job [job …]`: returns the jobs leased under `token` to
/// their lanes at their mint scores.
pub fn nack(ctx: &Ctx, argv: Argv) -> Result<(), Error> {
    settle(ctx, argv, true)
}

fn settle(ctx: &Ctx, argv: Argv, restore: bool) -> Result<(), Error> {
    if argv.len() < 4 {
        return Err(Error::WrongArity);
    }
    let prefix = args::prefix(argv.get(1).bytes(), ctx.is_cluster())?;
    let token = token(argv.get(2))?;
    let q = Queue::new(ctx, prefix);
    let (leases_key, jlease_key) = lease_keys(&q)?;
    let released: Vec<Released> = {
        let leases = ctx.open_read(&leases_key);
        let jlease = ctx.open_read(&jlease_key);
        let mut seen = HashSet::new();
        let mut out = Vec::new();
        for i in 3..argv.len() {
            let job = argv.get(i);
            if !seen.insert(job.bytes()) || !leased_under(leases.as_ref(), job, token) {
                continue;
            }
            out.push(Released::read(jlease.as_ref(), job, &jlease_key)?);
        }
        out
    };
    let settled = released.iter().filter(|r| r.record.is_some()).count();
    release(&q, &leases_key, &jlease_key, &released, restore)?;
    let counter = if restore {
        &stats::JOBS_NACKED
    } else {
        &stats::JOBS_ACKED
    };
    counter.add(settled as u64);
    ctx.reply_i64(settled as i64);
    Ok(())
}

/// `EMQ.EXTEND P token lease job [job …]`: moves the deadline of the jobs
/// leased under `token` to `max(token, now + lease)`. Reply `[deadline, n]`.
pub fn extend(ctx: &Ctx, argv: Argv) -> Result<(), Error> {
    if argv.len() < 5 {
        return Err(Error::WrongArity);
    }
    let prefix = args::prefix(argv.get(1).bytes(), ctx.is_cluster())?;
    let token = token(argv.get(2))?;
    let lease = args::lease(argv.get(3).bytes())?;
    let q = Queue::new(ctx, prefix);
    let leases_key = q.key(keys::LEASES);
    state::expect_kind(ctx, &leases_key, Kind::Zset)?;
    let deadline = token.max(ctx.now_ms().saturating_add(lease));
    let jobs: Vec<Arg> = {
        let leases = ctx.open_read(&leases_key);
        let mut seen = HashSet::new();
        (4..argv.len())
            .map(|i| argv.get(i))
            .filter(|job| seen.insert(job.bytes()) && leased_under(leases.as_ref(), *job, token))
            .collect()
    };
    if !jobs.is_empty() {
        let leases = ctx.open_write(&leases_key);
        let deadline_str = ctx.string_from_i64(deadline);
        let mut zadd = vec![leases_key.as_arg()];
        for job in &jobs {
            leases.zset_add(deadline as f64, *job, false);
            zadd.extend([deadline_str.as_arg(), *job]);
        }
        ctx.notify(&leases, Class::Zset, c"zadd");
        drop(leases);
        ctx.replicate(c"ZADD", &zadd);
    }
    stats::JOBS_EXTENDED.add(jobs.len() as u64);
    ctx.reply_array(2);
    ctx.reply_i64(deadline);
    ctx.reply_i64(jobs.len() as i64);
    Ok(())
}

/// `EMQ.REAP P [COUNT n]`: expired leases (deadline <= now), earliest first,
/// go back to pending as NACK does. Reply: the reaped job ids.
pub fn reap(ctx: &Ctx, argv: Argv) -> Result<(), Error> {
    if argv.len() < 2 {
        return Err(Error::WrongArity);
    }
    let prefix = args::prefix(argv.get(1).bytes(), ctx.is_cluster())?;
    let count = match argv.len() {
        2 => 100,
        4 if args::is_keyword(argv.get(2).bytes(), "COUNT") => {
            args::int_in(argv.get(3).bytes(), "COUNT", 1, i64::MAX, COUNT_RANGE)?
        }
        _ => return Err(Error::Syntax),
    };
    let q = Queue::new(ctx, prefix);
    let (leases_key, jlease_key) = lease_keys(&q)?;
    let now = ctx.now_ms();
    let expired: Vec<RStr> = match ctx.open_read(&leases_key) {
        Some(leases) => leases
            .zset_up_to(now as f64, usize::try_from(count).unwrap_or(usize::MAX))
            .into_iter()
            .map(|(job, _)| job)
            .collect(),
        None => Vec::new(),
    };
    let released: Vec<Released> = {
        let jlease = ctx.open_read(&jlease_key);
        expired
            .iter()
            .map(|job| Released::read(jlease.as_ref(), job.as_arg(), &jlease_key))
            .collect::<Result<_, _>>()?
    };
    release(&q, &leases_key, &jlease_key, &released, true)?;
    stats::JOBS_REAPED.add(expired.len() as u64);
    ctx.reply_array(expired.len());
    for job in &expired {
        ctx.reply_str(job.as_arg());
    }
    Ok(())
}

/// A lease about to be released, with its `P jlease` record split.
struct Released<'a> {
    job: Arg<'a>,
    /// `None`: no record (a damaged keyspace); the lease is only dropped.
    record: Option<Record>,
}

struct Record {
    text: RStr,
    /// Where the mint ends and the lane begins (after one space).
    split: usize,
    mint: f64,
}

impl Record {
    fn mint_text(&self) -> &[u8] {
        &self.text.bytes()[..self.split]
    }
    fn lane(&self) -> &[u8] {
        &self.text.bytes()[self.split + 1..]
    }
}

impl<'a> Released<'a> {
    fn read(jlease: Option<&ReadKey>, job: Arg<'a>, jlease_key: &RStr) -> Result<Released<'a>, Error> {
        let Some(text) = jlease.and_then(|h| h.hash_get(job)) else {
            return Ok(Released { job, record: None });
        };
        let (mint_text, mint, _) = state::parse_record(text.bytes()).ok_or_else(|| {
            Error::bad_stored("lease record of job", job.bytes(), jlease_key.bytes(), RECORD)
        })?;
        let split = mint_text.len();
        Ok(Released {
            job,
            record: Some(Record { text, split, mint }),
        })
    }
}

/// One lane touched by a release: its state before, and how many leases of
/// it go.
struct LaneRelease<'r> {
    name: &'r [u8],
    arg: RStr,
    before: Lane,
    released: i64,
}

/// Releases leases (ACK when `!restore`; NACK and REAP when `restore`):
/// validates every lane first, then writes.
fn release(
    q: &Queue,
    leases_key: &RStr,
    jlease_key: &RStr,
    items: &[Released],
    restore: bool,
) -> Result<(), Error> {
    if items.is_empty() {
        return Ok(());
    }
    let ctx = q.ctx;
    // ---- validate: each lane once ----
    let mut lanes: Vec<LaneRelease> = Vec::new();
    for rec in items.iter().filter_map(|r| r.record.as_ref()) {
        match lanes.iter_mut().find(|l| l.name == rec.lane()) {
            Some(l) => l.released += 1,
            None => {
                let arg = ctx.string(rec.lane());
                let before = q.lane(arg.as_arg())?;
                lanes.push(LaneRelease {
                    name: rec.lane(),
                    arg,
                    before,
                    released: 1,
                });
            }
        }
    }
    if !lanes.is_empty() {
        q.check_ring()?;
    }
    let active_key = q.key(keys::ACTIVE);
    let mut new_active = Vec::with_capacity(lanes.len());
    for l in &lanes {
        let v = l
            .before
            .active
            .checked_sub(l.released)
            .ok_or_else(|| Error::Overflow {
                what: "active count of lane",
                field: l.name.to_vec(),
                key: active_key.bytes().to_vec(),
            })?;
        new_active.push(v);
    }

    // ---- write: the lease entries, then the pending zsets ----
    let mut zrem = vec![leases_key.as_arg()];
    let mut hdel = vec![jlease_key.as_arg()];
    {
        let leases = ctx.open_write(leases_key);
        for r in items {
            leases.zset_rem(r.job);
            zrem.push(r.job);
        }
        ctx.notify(&leases, Class::Zset, c"zrem");
    }
    if items.iter().any(|r| r.record.is_some()) {
        let jlease = ctx.open_write(jlease_key);
        for r in items.iter().filter(|r| r.record.is_some()) {
            jlease.hash_del(r.job);
            hdel.push(r.job);
        }
        ctx.notify(&jlease, Class::Hash, c"hdel");
    }
    ctx.replicate(c"ZREM", &zrem);
    if hdel.len() > 1 {
        ctx.replicate(c"HDEL", &hdel);
    }
    let mint_texts: Vec<RStr> = if restore {
        items
            .iter()
            .filter_map(|r| r.record.as_ref())
            .map(|rec| ctx.string(rec.mint_text()))
            .collect()
    } else {
        Vec::new()
    };
    // ---- per lane: pending (restore), active count, ring ----
    for (l, active) in lanes.iter().zip(new_active) {
        let pending_key = q.pending(l.name);
        if restore {
            let pending = ctx.open_write(&pending_key);
            let mut zadd = vec![pending_key.as_arg()];
            let recs = items
                .iter()
                .filter_map(|r| r.record.as_ref().map(|rec| (r.job, rec)));
            for ((job, rec), text) in recs.zip(&mint_texts) {
                if rec.lane() == l.name {
                    pending.zset_add(rec.mint, job, false);
                    zadd.extend([text.as_arg(), job]);
                }
            }
            ctx.notify(&pending, Class::Zset, c"zadd");
            drop(pending);
            ctx.replicate(c"ZADD", &zadd);
        }
        q.set_active(&active_key, l.arg.as_arg(), active);
        let after = Lane {
            // Re-read, not predicted: a restored job may already have been pending.
            depth: ctx.len_of(&pending_key),
            active,
            ..l.before
        };
        q.follow(l.arg.as_arg(), ring_change(&l.before, &after));
    }
    Ok(())
}

/// Validates `P leases` (zset) and `P jlease` (hash) and returns their names.
fn lease_keys(q: &Queue) -> Result<(RStr, RStr), Error> {
    let leases_key = q.key(keys::LEASES);
    let jlease_key = q.key(keys::JLEASE);
    state::expect_kind(q.ctx, &leases_key, Kind::Zset)?;
    state::expect_kind(q.ctx, &jlease_key, Kind::Hash)?;
    Ok((leases_key, jlease_key))
}

fn token(arg: Arg) -> Result<i64, Error> {
    args::int_in(arg.bytes(), "token", i64::MIN, i64::MAX, INTEGER)
}

/// Whether `job`'s current lease deadline is exactly `token`.
fn leased_under(leases: Option<&ReadKey>, job: Arg, token: i64) -> bool {
    leases
        .and_then(|z| z.zset_score(job))
        .is_some_and(|score| score == token as f64 && score as i64 == token)
}
