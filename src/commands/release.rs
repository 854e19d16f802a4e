//! Ending leases: what ACK, NACK and REAP share (and the claims' and the
//! expiry timer's return of expired leases).
//!
//! A released lease leaves `P leases` and `P jlease`; its lane's `gactive`
//! drops by one (the field is removed at 0) and the ring follows the lane's
//! serviceability; a returned job goes back to its lane's pending zset at its
//! mint score. Releases are grouped by lane, so each lane is read and its
//! ring membership decided once per call.
//!
//! A lease whose record is missing or damaged (not `"<mint> <lane>"` with a
//! mint the server can store as a score and a non-empty lane) is dropped:
//! both entries go, nothing else is touched, the log says so. One damaged
//! record never stops the others.

use crate::errors::{quote, Error};
use crate::ffi::{Arg, Class, Key, RStr};
use crate::queue::Queue;
use crate::record;
use crate::schedule::{ring_change, Lane};
use crate::stats;

/// How a lease ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ending {
    /// Completed (ACK).
    Ack,
    /// Given back (NACK, REAP, expiry).
    Return,
}

/// What to do with the leases of a lane whose own state is damaged (a
/// stored limit or active count that is not an integer).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDamagedLane {
    /// The call fails and changes nothing (the commands a caller asked for).
    Fail,
    /// Those leases stay as they are; the others are released (the returns a
    /// claim or the timer makes on its own: one damaged lane must not stop
    /// the queue).
    Leave,
}

/// A job id, borrowed from the arguments or owned.
pub enum Lease<'a> {
    Arg(Arg<'a>),
    Owned(RStr),
}

impl Lease<'_> {
    fn arg(&self) -> Arg<'_> {
        match self {
            Lease::Arg(a) => *a,
            Lease::Owned(s) => s.as_arg(),
        }
    }
}

/// One lease to release, its record read.
struct Item<'a> {
    job: Lease<'a>,
    /// Whether `P jlease` has a record for it (even a damaged one).
    recorded: bool,
    /// The record's lane and mint; `None` when missing or damaged.
    home: Option<(RStr, f64)>,
}

/// One lane touched by a release.
struct Group {
    lane: RStr,
    before: Lane,
    released: i64,
}

pub struct Released {
    /// Leases released with a sound record.
    pub settled: u64,
    /// The jobs whose leases ended (sound or dropped), in order.
    pub jobs: Vec<RStr>,
}

/// Releases the leases of `jobs` (each currently leased), at most `limit` of
/// them. Validates every lane first (`on_damaged` says what a damaged one
/// does), then writes.
pub fn release(
    q: &Queue,
    jobs: Vec<Lease>,
    limit: usize,
    ending: Ending,
    on_damaged: OnDamagedLane,
) -> Result<Released, Error> {
    let leases = q.leases()?;
    let jlease = q.jlease()?;
    let ctx = q.ctx;
    // ---- read and validate ----
    let mut items: Vec<Item> = jobs.into_iter().map(|job| read_item(q, &jlease, job)).collect();
    if items.iter().any(|i| i.home.is_some()) {
        // The queue-wide keys first: damage there is an error whatever
        // `on_damaged` says.
        q.ring()?;
        q.active()?;
        q.limits()?;
        q.paused_key()?;
    }
    let mut states: Vec<(Vec<u8>, Lane)> = Vec::new();
    let mut left: Vec<Vec<u8>> = Vec::new();
    for item in &items {
        let Some((lane, _)) = &item.home else { continue };
        let known = |l: &(Vec<u8>, Lane)| l.0 == lane.bytes();
        if states.iter().any(known) || left.iter().any(|l| l.as_slice() == lane.bytes()) {
            continue;
        }
        match q.lane(lane.as_arg()) {
            Ok(before) => states.push((lane.bytes().to_vec(), before)),
            Err(e) if on_damaged == OnDamagedLane::Fail => return Err(e),
            Err(e) => {
                q.report(|| {
                    format!(
                        "leases of lane '{}' left in place: {}",
                        quote(lane.bytes()),
                        e.message().unwrap_or_default()
                    )
                });
                left.push(lane.bytes().to_vec());
            }
        }
    }
    items.retain(|i| {
        i.home
            .as_ref()
            .is_none_or(|(lane, _)| !left.iter().any(|l| l.as_slice() == lane.bytes()))
    });
    items.truncate(limit);
    let mut groups: Vec<Group> = Vec::new();
    for item in &items {
        let Some((lane, _)) = &item.home else { continue };
        match groups.iter_mut().find(|g| g.lane.bytes() == lane.bytes()) {
            Some(g) => g.released += 1,
            None => {
                let before = states
                    .iter()
                    .find(|s| s.0 == lane.bytes())
                    .map(|s| s.1)
                    .ok_or(Error::Internal)?;
                groups.push(Group {
                    lane: ctx.string(lane.bytes()),
                    before,
                    released: 1,
                });
            }
        }
    }
    let mut new_active = Vec::with_capacity(groups.len());
    for g in &groups {
        let active = g
            .before
            .active
            .checked_sub(g.released)
            .ok_or_else(|| Error::Overflow {
                what: "active count of lane",
                field: g.lane.bytes().to_vec(),
                key: q.active().map(|k| k.name().bytes().to_vec()).unwrap_or_default(),
            })?;
        new_active.push(active);
    }
    let pending: Vec<Key> = groups
        .iter()
        .map(|g| q.pending_zset(g.lane.bytes()))
        .collect::<Result<_, _>>()?;

    // ---- write: the lease entries, then each lane ----
    if items.is_empty() {
        return Ok(Released {
            settled: 0,
            jobs: Vec::new(),
        });
    }
    let mut zrem = vec![leases.name()];
    let mut hdel = vec![jlease.name()];
    for item in &items {
        leases.zset_rem(item.job.arg());
        zrem.push(item.job.arg());
        if item.recorded {
            jlease.hash_del(item.job.arg());
            hdel.push(item.job.arg());
        }
    }
    leases.notify(Class::Zset, c"zrem");
    q.call.repl.effect(c"ZREM", &zrem);
    if hdel.len() > 1 {
        jlease.notify(Class::Hash, c"hdel");
        q.call.repl.effect(c"HDEL", &hdel);
    }
    for ((g, active), zset) in groups.iter().zip(new_active).zip(&pending) {
        if ending == Ending::Return {
            restore(q, &items, g, *zset);
        }
        q.set_active(g.lane.as_arg(), active)?;
        let after = Lane {
            // Re-read, not predicted: a restored job may already have been pending.
            depth: zset.len() as u64,
            active,
            ..g.before
        };
        q.follow(g.lane.as_arg(), ring_change(&g.before, &after))?;
    }
    let dropped = items.iter().filter(|i| i.home.is_none()).count() as u64;
    if dropped > 0 {
        q.call.count(&stats::RECORDS_DROPPED, dropped);
        let first = items
            .iter()
            .find(|i| i.home.is_none())
            .map(|i| i.job.arg().bytes().to_vec());
        q.report(|| {
            format!(
                "{dropped} lease(s) dropped: record missing or not \"<mint> <lane>\" in '{}' (job '{}' first)",
                quote(jlease.name().bytes()),
                quote(&first.unwrap_or_default())
            )
        });
    }
    Ok(Released {
        settled: items.len() as u64 - dropped,
        jobs: items.iter().map(|i| ctx.string(i.job.arg().bytes())).collect(),
    })
}

/// Reads the record of `job`: its lane and its mint, parsed by the server's
/// own rules (what ZADD would store).
fn read_item<'a>(q: &Queue, jlease: &Key, job: Lease<'a>) -> Item<'a> {
    let text = jlease.hash_get(job.arg());
    let recorded = text.is_some();
    let home = text.and_then(|text| {
        let rec = record::parse(text.bytes())?;
        let mint = q.ctx.string(rec.mint).as_arg().to_score()?;
        Some((q.ctx.string(rec.lane), mint))
    });
    Item { job, recorded, home }
}

/// Puts the group's jobs back in their lane at their mint scores; the
/// replicated scores are the values applied, as the server prints them.
fn restore(q: &Queue, items: &[Item], g: &Group, pending: Key) {
    let mut zadd = vec![pending.name()];
    let mut texts = Vec::new();
    for item in items {
        if let Some((lane, mint)) = &item.home {
            if lane.bytes() == g.lane.bytes() {
                pending.zset_add(*mint, item.job.arg(), false);
                texts.push((crate::record::score_text(q.ctx, *mint), item.job.arg()));
            }
        }
    }
    for (text, job) in &texts {
        zadd.extend([text.as_arg(), *job]);
    }
    pending.notify(Class::Zset, c"zadd");
    q.call.repl.effect(c"ZADD", &zadd);
}

/// Returns the queue's expired leases (deadline <= now), earliest first, at
/// most `max` of them, as NACK does. Returns the jobs whose leases ended.
/// With `OnDamagedLane::Leave` the leases of damaged lanes are passed over
/// (at most `max` more of them looked at) and the next ones returned.
pub fn reap_expired(q: &Queue, max: usize, on_damaged: OnDamagedLane) -> Result<Vec<RStr>, Error> {
    let leases = q.leases()?;
    let now = q.ctx.now_ms() as f64;
    let look = match on_damaged {
        OnDamagedLane::Fail => max,
        OnDamagedLane::Leave => max.saturating_mul(2),
    };
    let expired: Vec<Lease> = leases
        .zset_range(now, look)
        .into_iter()
        .map(|(job, _)| Lease::Owned(job))
        .collect();
    if expired.is_empty() {
        return Ok(Vec::new());
    }
    Ok(release(q, expired, max, Ending::Return, on_damaged)?.jobs)
}
