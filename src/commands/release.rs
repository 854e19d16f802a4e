//! Ending leases: what ACK, NACK and REAP share (and the claims' and the
//! expiry timer's return of expired leases).
//!
//! A released lease leaves `P leases` and `P jlease`; its lane's `gactive`
//! drops by one (the field is removed at 0) and the ring follows the lane's
//! serviceability. A completed job (ACK) is gone and its `P jreturns` count
//! with it. A returned job (NACK, REAP, expiry) goes back to its lane's
//! pending zset at its mint score and its `P jreturns` count grows by one —
//! unless that count reaches the queue's `max-deliveries`: then it dies, to
//! `P dead` (score = now) with its record in `P jdead`. Releases are grouped
//! by lane, so each lane is read and its ring membership decided once.
//!
//! A lease whose record is missing or damaged (not `"<mint> <lane>"` with a
//! mint the server can store as a score and a non-empty lane) is dropped:
//! both entries go, the job goes nowhere, the log says so. When the record
//! still names a lane (only its mint is damaged), that lane's count drops as
//! for any lease ending: the record counted it (REPAIR counts it too). One
//! damaged record never stops the others.

use crate::args::parse_i64;
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
    /// Given back (NACK, REAP, expiry): counted as a return.
    Return,
}

/// What to do with the leases of a lane whose own state is damaged (a
/// stored limit or active count that is not an integer, a pending key of
/// another type).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDamagedLane {
    /// The call fails and changes nothing (the commands a caller asked for).
    Fail,
    /// Its leases end all the same and its jobs go back to its pending set;
    /// what the damaged numbers would decide (the count that is not a
    /// number, the ring membership) is left for REPAIR. A lane whose pending
    /// key holds another type cannot take its jobs back: they are set aside
    /// in `P dead`, where EMQ.REVIVE finds them once the lane is mended.
    /// (The returns a claim or the timer makes on their own: one damaged
    /// lane must not hold back the queue's other returns.)
    ReturnJobs,
}

/// A job id, borrowed from the arguments or owned.
pub enum Lease<'a> {
    Arg(Arg<'a>),
    Owned(RStr),
}

impl Lease<'_> {
    fn into_owned(self, ctx: &crate::ffi::Ctx) -> RStr {
        match self {
            Lease::Arg(a) => ctx.string(a.bytes()),
            Lease::Owned(s) => s,
        }
    }

    fn arg(&self) -> Arg<'_> {
        match self {
            Lease::Arg(a) => *a,
            Lease::Owned(s) => s.as_arg(),
        }
    }
}

/// One lease to release, its record read. The lane is read in place from
/// the record (one string per lease, not one per part: ACK ends 8 at once).
struct Item<'a> {
    job: Lease<'a>,
    /// The record as stored (even a damaged one).
    text: Option<RStr>,
    /// Where the lane the record names starts in `text` (even when its mint
    /// is damaged).
    lane_at: Option<usize>,
    /// The record's mint; `None` when the record is missing or damaged.
    mint: Option<f64>,
    /// For a returned job: its return count after this one, and whether it
    /// dies of it.
    returns: i64,
    dies: bool,
}

impl Item<'_> {
    /// The lane the record names.
    fn lane(&self) -> Option<&[u8]> {
        lane_of(&self.text, self.lane_at)
    }

    /// The record is sound: the job has a lane and a mint to go back to.
    fn sound(&self) -> bool {
        self.mint.is_some()
    }

    fn of_lane(&self, lane: &[u8]) -> bool {
        self.sound() && self.lane() == Some(lane)
    }
}

/// The lane a record names, from where it starts in the record (a borrow of
/// the record alone: the item's other fields stay writable beside it).
fn lane_of(text: &Option<RStr>, at: Option<usize>) -> Option<&[u8]> {
    Some(&text.as_ref()?.bytes()[at?..])
}

/// One lane touched by a release (its name made once, when it was read).
struct Group<'s> {
    lane: &'s RStr,
    /// Its state before; `None` when damaged (its ring membership is then
    /// left as it is).
    before: Option<Lane>,
    /// Its active count before; `None` when that is damaged (left as it is).
    active: Option<i64>,
    released: i64,
}

/// A lane's state as a release reads it.
enum LaneState {
    Sound(Lane),
    /// Its limit or its active count is damaged: `active` when that one is
    /// sound.
    Damaged {
        active: Option<i64>,
    },
    /// Its pending key holds another type: its jobs cannot go back (a
    /// return sets them aside in `P dead`).
    Unreachable {
        active: Option<i64>,
    },
}

pub struct Released<'a> {
    /// Leases released with a sound record.
    pub settled: u64,
    /// The jobs whose leases ended (sound or dropped), in order.
    pub jobs: Vec<Lease<'a>>,
}

/// The queue's `max-deliveries` (`None`: no limit).
pub fn max_deliveries(q: &Queue) -> Result<Option<i64>, Error> {
    let policy = q.policy()?;
    let field = q.ctx.string(b"max-deliveries");
    match policy.hash_get(field.as_arg()) {
        None => Ok(None),
        Some(v) => match parse_i64(v.bytes()) {
            Some(n) if n >= 1 => Ok(Some(n)),
            _ => Err(Error::bad_stored(
                "setting",
                b"max-deliveries",
                policy.name().bytes(),
                "an integer >= 1",
            )),
        },
    }
}

/// Releases the leases of `jobs` (each currently leased), at most `limit` of
/// them. Validates every lane first (`on_damaged` says what a damaged one
/// does), then writes.
pub fn release<'a>(
    q: &Queue,
    jobs: Vec<Lease<'a>>,
    limit: usize,
    ending: Ending,
    on_damaged: OnDamagedLane,
) -> Result<Released<'a>, Error> {
    let ctx = q.ctx;
    // ---- read and validate ----
    let leases = q.leases()?;
    let jlease = q.jlease()?;
    let jreturns = q.jreturns()?;
    let policy = match (ending, on_damaged) {
        (Ending::Ack, _) => None,
        (Ending::Return, OnDamagedLane::Fail) => max_deliveries(q)?,
        // A damaged setting must not stop the returns claims and the timer
        // make on their own: until it is mended, no job dies of them.
        (Ending::Return, OnDamagedLane::ReturnJobs) => match max_deliveries(q) {
            Err(e @ Error::BadStored { .. }) => {
                q.report(|| {
                    format!(
                        "no job dies until the policy is mended: {}",
                        e.message().unwrap_or_default()
                    )
                });
                None
            }
            other => other?,
        },
    };
    let mut items: Vec<Item> = jobs.into_iter().map(|job| read_item(q, &jlease, job)).collect();
    if items.iter().any(|i| i.lane().is_some()) {
        // The queue-wide keys first: damage there is an error whatever
        // `on_damaged` says.
        q.ring()?;
        q.active()?;
        q.limits()?;
        q.paused_key()?;
    }
    let mut states: Vec<(RStr, LaneState)> = Vec::new();
    for item in &items {
        let Some(lane) = item.lane() else { continue };
        if states.iter().any(|s| s.0.bytes() == lane) {
            continue;
        }
        // A caller's command needs sound lanes for the leases it ends with
        // a sound record; a dropped lease's lane only has its count lowered
        // when that can be done.
        let must_be_sound = on_damaged == OnDamagedLane::Fail && items.iter().any(|i| i.of_lane(lane));
        let name = ctx.string(lane);
        let read = q.lane_read(name.as_arg());
        let (state, damage) = match read.lane() {
            Ok(before) if before.active >= 0 => (LaneState::Sound(before), None),
            // A negative count is damage (claims skip the lane): left as it
            // is for REPAIR, not rounded away by the release.
            Ok(_) => (
                LaneState::Damaged { active: None },
                Some("its active count is negative".to_string()),
            ),
            Err(e) if must_be_sound => return Err(e),
            Err(e) => {
                // `P gpaused` of another type is the queue's damage, not the lane's.
                read.paused.clone()?;
                let active = read.active.clone().ok().filter(|a| *a >= 0);
                let state = if read.depth.is_err() {
                    LaneState::Unreachable { active }
                } else {
                    LaneState::Damaged { active }
                };
                (state, Some(e.message().unwrap_or_default()))
            }
        };
        if let Some(damage) = damage {
            q.report(|| {
                let what = match state {
                    LaneState::Unreachable { .. } => {
                        "its returned jobs set aside in P dead (EMQ.REVIVE once mended)"
                    }
                    _ => "its jobs returned, its bookkeeping left for EMQ.REPAIR",
                };
                format!("lane '{}': {what}: {damage}", quote(lane))
            });
        }
        states.push((name, state));
    }
    let unreachable = |lane: &[u8]| {
        states
            .iter()
            .any(|s| s.0.bytes() == lane && matches!(s.1, LaneState::Unreachable { .. }))
    };
    items.truncate(limit);
    let mut groups: Vec<Group> = Vec::new();
    for item in &mut items {
        let Some(lane) = lane_of(&item.text, item.lane_at) else {
            continue;
        };
        if ending == Ending::Return && item.sound() {
            let before = jreturns
                .hash_get(item.job.arg())
                .and_then(|v| parse_i64(v.bytes()))
                .filter(|n| *n >= 0)
                .unwrap_or(0);
            item.returns = before.saturating_add(1);
            // A lane that cannot take its job back: set aside as dead.
            item.dies = policy.is_some_and(|max| item.returns >= max) || unreachable(lane);
        }
        match groups.iter_mut().find(|g| g.lane.bytes() == lane) {
            Some(g) => g.released += 1,
            None => {
                let Some((name, state)) = states.iter().find(|s| s.0.bytes() == lane) else {
                    return Err(Error::Internal);
                };
                let (before, active) = match state {
                    LaneState::Sound(l) => (Some(*l), Some(l.active)),
                    LaneState::Damaged { active } | LaneState::Unreachable { active } => (None, *active),
                };
                groups.push(Group {
                    lane: name,
                    before,
                    active,
                    released: 1,
                });
            }
        }
    }
    let mut new_active = Vec::with_capacity(groups.len());
    for g in &groups {
        let active = match g.active {
            None => None,
            Some(a) => Some(a.checked_sub(g.released).ok_or_else(|| Error::Overflow {
                what: "active count of lane",
                field: g.lane.bytes().to_vec(),
                key: q.active().map(|k| k.name().bytes().to_vec()).unwrap_or_default(),
            })?),
        };
        new_active.push(active);
    }
    // The lanes that take jobs back (not one whose pending key holds another
    // type: its jobs die instead).
    let pending: Vec<Option<Key>> = groups
        .iter()
        .map(|g| match unreachable(g.lane.bytes()) {
            true => Ok(None),
            false => q.pending_zset(g.lane.bytes()).map(Some),
        })
        .collect::<Result<_, _>>()?;
    let graves = match items.iter().any(|i| i.dies) {
        true => Some((q.dead()?, q.jdead()?)),
        false => None,
    };
    if items.is_empty() {
        return Ok(Released {
            settled: 0,
            jobs: Vec::new(),
        });
    }

    // ---- write: the lease entries, the returns and deaths, then each lane ----
    let mut zrem = vec![leases.name()];
    let mut hdel = vec![jlease.name()];
    for item in &items {
        leases.zset_rem(item.job.arg());
        zrem.push(item.job.arg());
        if item.text.is_some() {
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
    count_returns(q, &jreturns, &items);
    if let Some((dead, jdead)) = graves {
        bury(q, dead, jdead, &items);
    }
    for ((g, active), zset) in groups.iter().zip(new_active).zip(&pending) {
        if let (Ending::Return, Some(zset)) = (ending, zset) {
            restore(q, &items, g, *zset);
        }
        let Some(active) = active else { continue };
        q.set_active(g.lane.as_arg(), active)?;
        let (Some(before), Some(zset)) = (g.before, zset) else {
            continue;
        };
        let after = Lane {
            // Re-read, not predicted: a restored job may already have been pending.
            depth: zset.len() as u64,
            active,
            ..before
        };
        q.follow(g.lane.as_arg(), ring_change(&before, &after))?;
    }
    let dropped = items.iter().filter(|i| !i.sound()).count() as u64;
    if dropped > 0 {
        q.call.count(&stats::RECORDS_DROPPED, dropped);
        let first = items
            .iter()
            .find(|i| !i.sound())
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
        jobs: items.into_iter().map(|i| i.job).collect(),
    })
}

/// Reads the record of `job`: its lane and its mint, parsed by the server's
/// own rules (what ZADD would store).
fn read_item<'a>(q: &Queue, jlease: &Key, job: Lease<'a>) -> Item<'a> {
    let text = jlease.hash_get(job.arg());
    let rec = text.as_ref().and_then(|text| record::parse(text.bytes()));
    Item {
        job,
        lane_at: rec.map(|r| r.mint.len() + 1),
        mint: rec.and_then(|r| record::mint_score(q.ctx, r.mint)),
        text,
        returns: 0,
        dies: false,
    }
}

/// `P jreturns`: the new count of each job returned, and no count for a job
/// completed or dead.
fn count_returns(q: &Queue, jreturns: &Key, items: &[Item]) {
    let mut counts = Vec::new();
    let mut gone = vec![jreturns.name()];
    for item in items.iter().filter(|i| i.sound()) {
        if item.returns > 0 && !item.dies {
            counts.push((q.ctx.string_from_i64(item.returns), item.job.arg()));
        } else if jreturns.hash_has(item.job.arg()) {
            gone.push(item.job.arg());
        }
    }
    if !counts.is_empty() {
        let mut hset = vec![jreturns.name()];
        for (n, job) in &counts {
            jreturns.hash_set(*job, n.as_arg());
            hset.extend([*job, n.as_arg()]);
        }
        jreturns.notify(Class::Hash, c"hset");
        q.call.repl.effect(c"HSET", &hset);
    }
    if gone.len() > 1 {
        for job in &gone[1..] {
            jreturns.hash_del(*job);
        }
        jreturns.notify(Class::Hash, c"hdel");
        q.call.repl.effect(c"HDEL", &gone);
    }
}

/// The jobs that die of this return: to `P dead` (score = now) with their
/// records in `P jdead`.
fn bury(q: &Queue, dead: Key, jdead: Key, items: &[Item]) {
    let dying: Vec<&Item> = items.iter().filter(|i| i.dies).collect();
    if dying.is_empty() {
        return;
    }
    let now_ms = q.ctx.now_ms();
    let now = q.ctx.string_from_i64(now_ms);
    let mut zadd = vec![dead.name()];
    let mut hset = vec![jdead.name()];
    let now_score = now_ms as f64;
    for item in &dying {
        let (Some(text), job) = (&item.text, item.job.arg()) else {
            continue;
        };
        dead.zset_add(now_score, job, false);
        jdead.hash_set(job, text.as_arg());
        zadd.extend([now.as_arg(), job]);
        hset.extend([job, text.as_arg()]);
    }
    dead.notify(Class::Zset, c"zadd");
    jdead.notify(Class::Hash, c"hset");
    q.call.repl.effect(c"ZADD", &zadd);
    q.call.repl.effect(c"HSET", &hset);
    q.call.count(&stats::JOBS_DIED, dying.len() as u64);
}

/// Puts the group's returned jobs (the living) back in their lane at their
/// mint scores; the replicated scores are the values applied, as the server
/// prints them.
fn restore(q: &Queue, items: &[Item], g: &Group, pending: Key) {
    let back: Vec<(RStr, Arg)> = items
        .iter()
        .filter(|i| i.of_lane(g.lane.bytes()) && !i.dies)
        .filter_map(|i| {
            let mint = i.mint?;
            pending.zset_add(mint, i.job.arg(), false);
            Some((record::score_text(q.ctx, mint), i.job.arg()))
        })
        .collect();
    if back.is_empty() {
        return;
    }
    let mut zadd = vec![pending.name()];
    for (text, job) in &back {
        zadd.extend([text.as_arg(), *job]);
    }
    pending.notify(Class::Zset, c"zadd");
    q.call.repl.effect(c"ZADD", &zadd);
}

/// Returns the queue's expired leases (deadline <= now), earliest first, at
/// most `max` of them, as NACK does. Returns the jobs whose leases ended.
/// With `OnDamagedLane::ReturnJobs` the leases of a lane whose pending key
/// holds another type are passed over (at most `max` more of them looked at)
/// and the next ones returned.
pub fn reap_expired(q: &Queue, max: usize, on_damaged: OnDamagedLane) -> Result<Vec<RStr>, Error> {
    let leases = q.leases()?;
    let now = q.ctx.now_ms() as f64;
    let look = match on_damaged {
        OnDamagedLane::Fail => max,
        OnDamagedLane::ReturnJobs => max.saturating_mul(2),
    };
    let expired: Vec<Lease> = leases
        .zset_range(now, look)
        .into_iter()
        .map(|(job, _)| Lease::Owned(job))
        .collect();
    if expired.is_empty() {
        return Ok(Vec::new());
    }
    let released = release(q, expired, max, Ending::Return, on_damaged)?;
    Ok(released
        .jobs
        .into_iter()
        .map(|job| job.into_owned(q.ctx))
        .collect())
}
