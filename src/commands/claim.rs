//! EMQ.CLAIM and EMQ.WCLAIM: one rota step, then `K = min(weight, depth,
//! headroom)` heads of the rotated lane, leased under one deadline.
//!
//! What a turn does with the ring's head lane (`schedule::head_turn`):
//! - it cannot be served (empty name, empty, paused, no headroom): it leaves
//!   the ring (a head pop), nothing is served;
//! - its own state is damaged: it rotates to the tail untouched, the log
//!   says why, nothing is served;
//! - else the ring rotates one step and the lane's heads are taken in ZPOPMIN
//!   order: a head already leased or dead (a duplicate id) is removed from
//!   the lane, the others are leased (`P leases` score = the deadline,
//!   `P jlease` = `"<mint> <lane>"`) until K are; `gactive[lane]` grows by
//!   the number leased; a lane no longer serviceable then leaves the ring
//!   (rotated to the tail and removed from it: in one step, the head popped).
//!
//! Every key a turn touches is opened, type-checked and permission-checked
//! before its first write; damage to a queue-wide key is an error.
//!
//! With BLOCK a claim first looks, without writing, for the first lane of the
//! ring that would serve; only then does it run the turns up to it (dropping
//! and skipping the lanes before it). A claim that would serve nothing writes
//! nothing and waits: a blocked client's wake-up that writes and keeps
//! waiting aborts Redis 7.0.

use std::cell::Cell;

use smallvec::SmallVec;

use crate::args::{self, Args};
use crate::config;
use crate::errors::{Error, BOOLEAN, COUNT_RANGE, INTEGER, TIMEOUT_RANGE};
use crate::ffi::block::Wait;
use crate::ffi::{word, Arg, Argv, Class, Ctx, Key, KeyName, Kind, Members, RStr, Reply, Word};
use crate::keys::Fixed;
use crate::queue::Queue;
use crate::record;

use super::release::{self, OnDamagedLane};
use crate::schedule::{self, Head, Stored, Turn};
use crate::stats;

use super::Call;

/// `EMQ.CLAIM P lease [BLOCK ms]`: plain rotation, the weight taken as 1.
pub fn claim<'a>(call: &Call, argv: Argv<'a>) -> Result<Option<Reply>, Error> {
    command(call, argv, false)
}

/// `EMQ.WCLAIM P lease [BLOCK ms]`: the weighted rotation.
pub fn wclaim<'a>(call: &Call, argv: Argv<'a>) -> Result<Option<Reply>, Error> {
    command(call, argv, true)
}

/// The most a BLOCK timeout may be: the server adds it to its clock and
/// refuses a sum past 2^63 (kept a day clear of that, for clocks that differ).
fn block_limit(now: i64) -> i64 {
    i64::MAX - now.max(0) - 86_400_000
}

struct Request<'a> {
    prefix: Arg<'a>,
    lease: i64,
    /// The BLOCK timeout in ms (0 = forever).
    block: Option<i64>,
}

fn parse<'a>(ctx: &Ctx, argv: Argv<'a>) -> Result<Request<'a>, Error> {
    if argv.len() != 3 && argv.len() != 5 {
        return Err(Error::WrongArity);
    }
    let mut args = Args::new(argv, 2, 4)?;
    let prefix = args.prefix(ctx.is_cluster())?;
    let lease = args.lease()?;
    let block = match args.option("BLOCK")? {
        None => None,
        Some(ms) => {
            let ms = args::int_in(ms.bytes(), "BLOCK timeout", 0, i64::MAX, TIMEOUT_RANGE)?;
            if ms > block_limit(ctx.now_ms()) {
                return Err(Error::TimeoutRange);
            }
            Some(ms)
        }
    };
    Ok(Request { prefix, lease, block })
}

/// The reply, or `None` when the client now waits (answered later).
fn command<'a>(call: &Call, argv: Argv<'a>, weighted: bool) -> Result<Option<Reply>, Error> {
    let req = parse(call.ctx, argv)?;
    let q = Queue::new(call, req.prefix);
    let claim = Claim::open(&q, weighted)?;
    let deadline = call.ctx.now_ms().saturating_add(req.lease);
    let Some(timeout) = req.block.filter(|_| call.ctx.may_block()) else {
        let served = claim.turn(deadline)?;
        return Ok(Some(served.unwrap_or_else(|| {
            call.count(&stats::CLAIMS_EMPTY, 1);
            Reply::empty()
        })));
    };
    // Expired leases go back first, even when nothing else can be served
    // (the call's own context may write and then wait; a wake-up may not).
    let first = claim.first_servable()?;
    if claim.reap_first()? {
        if let Some(reply) = claim.serve_from(claim.first_servable()?, deadline)? {
            return Ok(Some(reply));
        }
    } else if let Some(reply) = claim.serve_from(first, deadline)? {
        return Ok(Some(reply));
    }
    // Nothing can be served: wait on the ring, woken when a lane joins it
    // (and by the expiry timer when leases of the queue run out).
    stats::BLOCKED.add(1);
    let watch = crate::expiry::watch(call.ctx, req.prefix.bytes(), claim.leases.zset_first_score());
    let ready = if weighted { wclaim_ready } else { claim_ready };
    call.ctx.block_on_key(
        claim.ring.name(),
        timeout,
        Wait {
            ready,
            ended: wait_ended,
            arg: watch,
        },
    );
    Ok(None)
}

/// A blocked claim's ring was signalled: claim once if a lane can be served
/// (`Some`), else keep waiting without writing anything (`None`).
fn on_ready<'a>(ctx: &Ctx, argv: Argv<'a>, weighted: bool) -> Result<Option<Reply>, Error> {
    let call = Call::new(ctx, false);
    let req = parse(ctx, argv)?;
    let q = Queue::new(&call, req.prefix);
    let claim = Claim::open(&q, weighted)?;
    let deadline = ctx.now_ms().saturating_add(req.lease);
    let Some(first) = claim.first_servable()? else {
        return Ok(None);
    };
    // It will serve (returning expired leases only makes lanes more
    // servable): now it may write.
    if claim.reap_first()? {
        return claim.serve_from(claim.first_servable()?, deadline);
    }
    claim.serve_from(Some(first), deadline)
}

/// However a wait ends (served, timed out, gone): one waiter fewer.
fn wait_ended(ctx: Option<&Ctx>, watch: u64) {
    stats::BLOCKED.sub(1);
    crate::expiry::unwatch(ctx, watch);
}

fn claim_ready<'a>(ctx: &Ctx, argv: Argv<'a>) -> Result<Option<Reply>, Error> {
    on_ready(ctx, argv, false)
}

fn wclaim_ready<'a>(ctx: &Ctx, argv: Argv<'a>) -> Result<Option<Reply>, Error> {
    on_ready(ctx, argv, true)
}

/// A claim on one queue: the queue-wide keys it reads and writes, each
/// opened and checked once, before anything is written.
struct Claim<'q> {
    q: &'q Queue<'q>,
    ring: Key<'q>,
    leases: Key<'q>,
    jlease: Key<'q>,
    /// Read only, and most often missing: opened only when they exist
    /// (checked again after the claim's own returns, which may bury jobs).
    jdead: Cell<Option<Key<'q>>>,
    active: Key<'q>,
    limits: Cell<Option<Key<'q>>>,
    weights: Cell<Option<Key<'q>>>,
    /// `P gpaused`'s name when that set exists (checked a set at open).
    paused: Option<KeyName<'q>>,
}

/// What a turn will do with the head lane, decided from reads only.
enum Plan<'q> {
    Drop,
    Skip(schedule::Damage),
    Serve(Serving<'q>),
}

/// A serving turn: which heads go, which of them are leased.
struct Serving<'q> {
    pending: Key<'q>,
    /// The turn's K: heads were taken until K were leased or none was left
    /// (what a replica replays: the duplicates met on the way included).
    k: i64,
    /// Leased, in mint order, with their mint scores.
    taken: Members,
    /// Duplicates removed from the lane.
    dropped: SmallVec<[RStr; 2]>,
    new_active: i64,
    leaves: bool,
}

impl<'q> Claim<'q> {
    fn open(q: &'q Queue<'q>, weighted: bool) -> Result<Claim<'q>, Error> {
        let claim = Claim {
            q,
            ring: q.ring()?,
            leases: q.leases()?,
            jlease: q.jlease()?,
            jdead: Cell::new(q.optional(Fixed::Jdead, Kind::Hash)?),
            active: q.active()?,
            limits: Cell::new(q.optional(Fixed::Limit, Kind::Hash)?),
            weights: Cell::new(if weighted {
                q.optional(Fixed::Weight, Kind::Hash)?
            } else {
                None
            }),
            paused: None,
        };
        // `P gpaused` is checked (its permission, its type) now, not at the
        // first lane it is asked about; most queues have none.
        let paused = q.paused_key()?;
        if q.ctx.key_exists(paused.as_arg()) {
            q.ctx.set_call(c"SISMEMBER", paused.as_arg(), word(Word::Zero))?;
            return Ok(Claim {
                paused: Some(paused),
                ..claim
            });
        }
        Ok(claim)
    }

    /// One turn of a non-blocking claim: the reply when it served. Expired
    /// leases go back first (`emq.reap-on-claim`).
    fn turn(&self, deadline: i64) -> Result<Option<Reply>, Error> {
        if self.reap_due()? {
            // The head's keys are opened (and their permission checked)
            // before the first write.
            if let Some(lane) = self.ring.list_get(0) {
                self.plan(&lane)?;
            }
            self.reap_first()?;
        }
        self.head_turn(deadline)
    }

    fn head_turn(&self, deadline: i64) -> Result<Option<Reply>, Error> {
        let Some(lane) = self.ring.list_get(0) else {
            return Ok(None);
        };
        let plan = self.plan(&lane)?;
        Ok(self.apply(lane, plan, deadline))
    }

    /// Whether the claim should return expired leases first: the config
    /// allows it and the queue's earliest lease has expired.
    fn reap_due(&self) -> Result<bool, Error> {
        Ok(config::reap_on_claim() > 0 && self.leases.zset_has_at_most(self.q.ctx.now_ms() as f64))
    }

    /// Returns up to `emq.reap-on-claim` expired leases (a damaged lane's
    /// are left, not a reason to stop); whether any went back.
    fn reap_first(&self) -> Result<bool, Error> {
        if !self.reap_due()? {
            return Ok(false);
        }
        let reaped = release::reap_expired(self.q, config::reap_on_claim(), OnDamagedLane::ReturnJobs)?;
        self.q
            .call
            .count(&stats::JOBS_REAPED_BY_CLAIMS, reaped.len() as u64);
        // A death may have made `P jdead`.
        self.jdead.set(self.q.optional(Fixed::Jdead, Kind::Hash)?);
        Ok(!reaped.is_empty())
    }

    /// The position in the ring of the first lane that would serve (read
    /// only: every lane up to it is opened and checked).
    fn first_servable(&self) -> Result<Option<usize>, Error> {
        for i in 0..self.ring.len() {
            let Some(lane) = self.ring.list_get(i as i64) else {
                break;
            };
            if matches!(self.plan(&lane)?, Plan::Serve(ref s) if !s.taken.is_empty()) {
                return Ok(Some(i));
            }
        }
        Ok(None)
    }

    /// Serves the lane at ring position `first`, dropping and skipping the
    /// ones before it; nothing when there is none.
    fn serve_from(&self, first: Option<usize>, deadline: i64) -> Result<Option<Reply>, Error> {
        let Some(first) = first else {
            return Ok(None);
        };
        // The turns before it drop or skip lanes, or remove a lane's
        // duplicates: none changes the state the servable lane was planned
        // on (a lane met twice plans the same both times), so the turn at
        // `first` serves.
        for _ in 0..=first {
            if let Some(reply) = self.head_turn(deadline)? {
                return Ok(Some(reply));
            }
        }
        Ok(None)
    }

    /// Reads a stored number of the lane: absent, an integer, or damaged.
    fn stored(hash: Key, lane: Arg) -> Stored {
        match hash.hash_get(lane) {
            None => Ok(None),
            Some(v) => args::parse_i64(v.bytes()).map(Some).ok_or(()),
        }
    }

    /// Decides the turn of `lane` (read only).
    fn plan(&self, lane: &RStr) -> Result<Plan<'q>, Error> {
        let name = lane.bytes();
        if name.is_empty() {
            return Ok(Plan::Drop);
        }
        let lane_arg = lane.as_arg();
        let pending = self.q.pending(name)?;
        let depth = match pending.kind() {
            Kind::Empty | Kind::Zset => Some(pending.len() as u64),
            _ => None,
        };
        // Read in the order `head_turn` decides, each only when needed.
        let paused = match &self.paused {
            Some(set) if depth.is_some_and(|d| d > 0) => {
                self.q.ctx.set_call(c"SISMEMBER", set.as_arg(), lane_arg)? == 1
            }
            _ => false,
        };
        let head = Head {
            name_empty: false,
            depth,
            weight: self.weights.get().map_or(Ok(None), |w| Self::stored(w, lane_arg)),
            limit: self.limits.get().map_or(Ok(None), |l| Self::stored(l, lane_arg)),
            active: Self::stored(self.active, lane_arg),
            paused,
        };
        let (k, state) = match schedule::head_turn(&head, config::max_claim()) {
            Turn::Drop => return Ok(Plan::Drop),
            Turn::Skip(damage) => return Ok(Plan::Skip(damage)),
            Turn::Serve { k, lane } => (k, lane),
        };
        let (taken, dropped) = self.take_heads(pending, k);
        let consumed = (taken.len() + dropped.len()) as u64;
        Ok(Plan::Serve(Serving {
            pending,
            k,
            new_active: state.active + taken.len() as i64,
            leaves: schedule::leaves_after(&state, consumed, taken.len() as i64),
            taken,
            dropped,
        }))
    }

    /// The heads a turn takes from `pending`: up to `k` that are not already
    /// leased or dead, and the duplicates met before the last of them.
    fn take_heads(&self, pending: Key<'q>, k: i64) -> (Members, SmallVec<[RStr; 2]>) {
        let want = usize::try_from(k).unwrap_or(usize::MAX);
        let mut window = want;
        loop {
            let mut heads = pending.zset_range(f64::INFINITY, window);
            let seen = heads.len();
            let duplicate: SmallVec<[bool; 16]> = heads
                .iter()
                .map(|(job, _)| {
                    self.jlease.hash_has(job.as_arg())
                        || self.jdead.get().is_some_and(|dead| dead.hash_has(job.as_arg()))
                })
                .collect();
            let (consumed, taken_n) = schedule::take_heads(k, duplicate.iter().copied());
            // A window that ended on duplicates may hide more fresh heads.
            if taken_n < want && seen == window && window < pending.len() {
                window = window.saturating_mul(2);
                continue;
            }
            if taken_n == consumed {
                // No duplicate among them (the common case): the heads as read.
                heads.truncate(consumed);
                return (heads, SmallVec::new());
            }
            let mut taken = Members::new();
            let mut dropped = SmallVec::new();
            for (head, dup) in heads.into_iter().zip(duplicate).take(consumed) {
                if dup {
                    dropped.push(head.0);
                } else {
                    taken.push(head);
                }
            }
            return (taken, dropped);
        }
    }

    /// Carries out a planned turn; the reply when it leased jobs.
    fn apply(&self, lane: RStr, plan: Plan<'q>, deadline: i64) -> Option<Reply> {
        let call = self.q.call;
        match plan {
            Plan::Drop => {
                self.ring.list_pop_head();
                self.ring.notify(Class::List, c"lrem");
                call.repl.effect(c"LPOP", &[self.ring.name()]);
                None
            }
            Plan::Skip(damage) => {
                if self.rotate() {
                    self.replicate_rotation();
                }
                call.count(&stats::LANES_SKIPPED, 1);
                self.q.report(|| {
                    format!(
                        "lane '{}' skipped: {}",
                        crate::errors::quote(lane.bytes()),
                        damage.describe()
                    )
                });
                None
            }
            Plan::Serve(serving) => {
                let served = self.serve(&lane, &serving, deadline);
                call.count(&stats::DUPLICATES_DROPPED, serving.dropped.len() as u64);
                if serving.taken.is_empty() {
                    self.replicate_effects(&lane, &serving, &served);
                    return None;
                }
                if config::replicate_command() {
                    call.repl
                        .turn(self.q.prefix, lane.as_arg(), deadline, serving.k, serving.leaves);
                } else {
                    self.replicate_effects(&lane, &serving, &served);
                }
                call.count(&stats::CLAIMS, 1);
                call.count(&stats::JOBS_CLAIMED, serving.taken.len() as u64);
                crate::expiry::leased(self.q.ctx, self.q.prefix_bytes, deadline);
                Some(claim_reply(lane, deadline, serving.taken))
            }
        }
    }

    /// Rotates the ring one step (what `LMOVE ring ring LEFT RIGHT` does);
    /// whether it moved (a one-element ring stays as it is).
    fn rotate(&self) -> bool {
        let moved = self.ring.len() > 1;
        if moved {
            if let Some(head) = self.ring.list_pop_head() {
                self.ring.list_push_tail(head.as_arg());
            }
        } else {
            // Popping a one-element ring would delete the key; it was
            // rotated all the same, as LMOVE would: WATCH sees it.
            self.ring.touch();
        }
        self.ring.notify(Class::List, c"lpop");
        self.ring.notify(Class::List, c"rpush");
        moved
    }

    fn replicate_rotation(&self) {
        let ring = self.ring.name();
        self.q
            .call
            .repl
            .effect(c"LMOVE", &[ring, ring, word(Word::Left), word(Word::Right)]);
    }

    /// The writes of a serving turn; nothing here can fail.
    fn serve(&self, lane: &RStr, s: &Serving, deadline: i64) -> Served {
        let ctx = self.q.ctx;
        // A lane that leaves is rotated to the tail and removed from it: in
        // one step, the head removed (O(1)).
        let rotated = if s.leaves {
            self.ring.list_pop_head();
            self.ring.notify(Class::List, c"lpop");
            false
        } else {
            self.rotate()
        };
        for job in s.taken.iter().map(|(job, _)| job).chain(&s.dropped) {
            s.pending.zset_rem(job.as_arg());
        }
        s.pending.notify(Class::Zset, c"zpopmin");
        let mut records = SmallVec::new();
        let mut active = None;
        if !s.taken.is_empty() {
            for (job, mint) in &s.taken {
                self.leases.zset_add(deadline as f64, job.as_arg(), false);
                let record = record::lease_record(ctx, *mint, lane.bytes());
                self.jlease.hash_set(job.as_arg(), record.as_arg());
                records.push(record);
            }
            self.leases.notify(Class::Zset, c"zadd");
            self.jlease.notify(Class::Hash, c"hset");
            let count = ctx.string_from_i64(s.new_active);
            self.active.hash_set(lane.as_arg(), count.as_arg());
            self.active.notify(Class::Hash, c"hincrby");
            active = Some(count);
        }
        Served {
            rotated,
            deadline,
            records,
            active,
        }
    }

    /// A served turn as core commands, with the deadline as a value: what a
    /// replica or an AOF reader without the module can apply.
    fn replicate_effects(&self, lane: &RStr, s: &Serving, served: &Served) {
        let repl = &self.q.call.repl;
        if s.leaves {
            repl.effect(c"LPOP", &[self.ring.name()]);
        } else if served.rotated {
            self.replicate_rotation();
        }
        let mut zrem: SmallVec<[Arg; 17]> = smallvec::smallvec![s.pending.name()];
        zrem.extend(s.taken.iter().map(|(job, _)| job.as_arg()));
        zrem.extend(s.dropped.iter().map(RStr::as_arg));
        if zrem.len() > 1 {
            repl.effect(c"ZREM", &zrem);
        }
        if let Some(active) = &served.active {
            let deadline = self.q.ctx.string_from_i64(served.deadline);
            let mut zadd: SmallVec<[Arg; 17]> = smallvec::smallvec![self.leases.name()];
            let mut hset: SmallVec<[Arg; 17]> = smallvec::smallvec![self.jlease.name()];
            for ((job, _), record) in s.taken.iter().zip(&served.records) {
                zadd.extend([deadline.as_arg(), job.as_arg()]);
                hset.extend([job.as_arg(), record.as_arg()]);
            }
            repl.effect(c"ZADD", &zadd);
            repl.effect(c"HSET", &hset);
            repl.effect(c"HSET", &[self.active.name(), lane.as_arg(), active.as_arg()]);
        }
    }
}

/// What a serving turn wrote, for its replication.
struct Served {
    /// The ring rotated one step (the lane stays, and the ring holds more
    /// than it).
    rotated: bool,
    deadline: i64,
    /// The lease records, in the order of the jobs taken.
    records: SmallVec<[RStr; 4]>,
    /// The lane's new active count, when it leased jobs.
    active: Option<RStr>,
}

/// `[lane, deadline, job…]`.
fn claim_reply(lane: RStr, deadline: i64, taken: Members) -> Reply {
    let mut reply = Vec::with_capacity(2 + taken.len());
    reply.push(Reply::Owned(lane));
    reply.push(Reply::Int(deadline));
    reply.extend(taken.into_iter().map(|(job, _)| Reply::Owned(job)));
    Reply::Array(reply)
}

/// `EMQ.TURN P lane deadline K leaves`: a served turn exactly as a primary
/// made it and replicated it (`emq.replicate command`): rotate the ring, take
/// the lane's heads as the turn did — until K are leased until `deadline` or
/// none is left, the duplicates met on the way removed — and the lane leaves
/// the ring when `leaves` is 1. (K is the turn's clamp, at most the lane's
/// depth: a lane with fewer heads, or none fresh, does not fit.)
/// Internal: accepted only from the replication stream or an AOF load, where
/// the keyspace is the primary's at that point.
pub fn replay_turn<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 5, 5)?;
    if !call.ctx.replayed() {
        return Err(Error::InternalCommand("EMQ.TURN"));
    }
    let prefix = args.prefix(call.ctx.is_cluster())?;
    let lane_arg = args.lane()?;
    let deadline = args.int("deadline", i64::MIN, i64::MAX, INTEGER)?;
    let k = args.int("k", 1, i64::MAX, COUNT_RANGE)?;
    let leaves = args.int("leaves", 0, 1, BOOLEAN)? == 1;

    let q = Queue::new(call, prefix);
    let claim = Claim::open(&q, false)?;
    let mismatch = || Error::TurnMismatch {
        lane: lane_arg.bytes().to_vec(),
        key: claim.ring.name().bytes().to_vec(),
    };
    let lane = claim.ring.list_get(0).ok_or_else(mismatch)?;
    if lane.bytes() != lane_arg.bytes() {
        return Err(mismatch());
    }
    let pending = q.pending_zset(lane.bytes())?;
    let active = Claim::stored(claim.active, lane.as_arg())
        .map_err(|_| mismatch())?
        .unwrap_or(0);
    if (pending.len() as i64) < k {
        return Err(mismatch());
    }
    let (taken, dropped) = claim.take_heads(pending, k);
    if taken.is_empty() {
        return Err(mismatch());
    }
    let new_active = active.checked_add(taken.len() as i64).ok_or_else(mismatch)?;
    let serving = Serving {
        pending,
        k,
        taken,
        dropped,
        new_active,
        leaves,
    };
    claim.serve(&lane, &serving, deadline);
    // This server's own AOF (and nothing else: a replica's replicas get the
    // primary's stream as it is).
    call.repl.itself();
    Ok(claim_reply(lane, deadline, serving.taken))
}

#[cfg(test)]
mod tests {
    use super::block_limit;

    #[test]
    fn the_block_limit_leaves_room_on_the_servers_clock() {
        let now = 1_800_000_000_000;
        assert!(block_limit(now).checked_add(now).is_some());
        assert!(
            block_limit(now) > 1 << 62,
            "any timeout a person means is accepted"
        );
    }
}
