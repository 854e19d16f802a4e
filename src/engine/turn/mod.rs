//! One claim turn (EchoMQ's `@gclaim`, `@gwclaim`, `@gbclaim`;
//! ARCHITECTURE.md walks through it): the ring's head lane rotates to the
//! tail, then `K` of its heads are leased under one deadline — each popped
//! from the lane, its row's `attempts` raised by one (the token) and `state`
//! set `active`, into `P active` at the deadline — the lane's count grows by
//! the number leased, and a lane at its ceiling or emptied leaves the ring.
//!
//! The phases: `open` (the queue-wide keys, each opened, typed and
//! permission-checked once), `plan` (what the turn will do with the head
//! lane, from reads only), `apply` (the writes, the reply, and what
//! replicates). Every key a turn touches is checked before its first write;
//! damage to a queue-wide key is an error.

mod apply;
mod plan;
mod replay;

use std::cell::{Cell, RefCell};

use crate::ffi::{word, Key, KeyName, Kind, Reply, Text, Word};
use crate::model::credit::Fairness;
use crate::model::error::Error;
use crate::model::layout::Fixed;
use crate::model::row::Stalls;
use crate::model::schedule::ClaimKind;
use crate::queue::Queue;
use crate::runtime::{config, stats};

use super::next;
use super::returns::{self, Sweep};
use super::timer;

pub use replay::replay_turn;

/// A claim on one queue: the queue-wide keys it reads and writes.
pub struct Claim<'q> {
    q: &'q Queue<'q>,
    kind: ClaimKind,
    ring: Key<'q>,
    leases: Key<'q>,
    active: Key<'q>,
    /// Read only, and most often missing: opened only when they exist.
    limits: Cell<Option<Key<'q>>>,
    weights: Option<Key<'q>>,
    /// `P paused`'s name when that set exists (checked a set at open).
    paused: Option<KeyName<'q>>,
    /// `P grate`, and `P gtat` beside it, when the queue has rates.
    rates: Option<Key<'q>>,
    tats: Option<Key<'q>>,
    /// `P gnext`, when some lane waits in it.
    next: Option<Key<'q>>,
    /// The earliest next start of a lane [`Claim::first_servable`] met in the
    /// ring though its rate allows no start (rung by a rate-unaware script):
    /// a claim that waits without writing has the timer wake it then.
    held: Cell<Option<i64>>,
    /// Under fairness by time (WCLAIM, BCLAIM): the quantum and the lanes'
    /// credits and costs.
    time: Option<TimeKeys<'q>>,
    /// The lanes this claim passed over for their debt: one met again at the
    /// head (a whole rotation served nothing) is served whatever its credit.
    passes: Cell<usize>,
    passed: RefCell<Vec<Box<[u8]>>>,
}

/// What a claim under fairness by time reads: the quantum (ms), and
/// `P gcredit` and `P gcost` when they exist.
#[derive(Clone, Copy)]
pub struct TimeKeys<'q> {
    pub quantum_ms: i64,
    pub credits: Option<Key<'q>>,
    pub costs: Option<Key<'q>>,
}

impl<'q> Claim<'q> {
    /// The claim of `kind` on `q`, under the queue's `fairness` (CLAIM is
    /// count-fair under either).
    pub fn open(q: &'q Queue<'q>, kind: ClaimKind, fairness: Fairness) -> Result<Claim<'q>, Error> {
        let time = match (fairness, kind) {
            (_, ClaimKind::One) | (Fairness::Count, _) => None,
            (Fairness::Time { quantum_ms }, _) => Some(TimeKeys {
                quantum_ms,
                credits: q.optional(Fixed::Credit, Kind::Hash)?,
                costs: q.optional(Fixed::Cost, Kind::Hash)?,
            }),
        };
        // Each key in the order its checks decide which error a damaged
        // queue gets; the claim is built once (no copies of it).
        let ring = q.ring()?;
        let leases = q.leases()?;
        let active = q.active()?;
        let limits = q.optional(Fixed::Limit, Kind::Hash)?;
        // A time turn tops a lane up by its weight, whatever the claim.
        let weights = match (kind, time) {
            (ClaimKind::Weighted, _) | (_, Some(_)) => q.optional(Fixed::Weight, Kind::Hash)?,
            _ => None,
        };
        let rates = q.optional(Fixed::Rate, Kind::Hash)?;
        let next = q.optional(Fixed::Next, Kind::Zset)?;
        let tats = match rates {
            Some(_) => q.optional(Fixed::Tat, Kind::Hash)?,
            None => None,
        };
        // `P paused` is checked (its permission, its type) now, not at the
        // first lane it is asked about; most queues have none.
        let paused = q.paused_key()?;
        let paused = if q.ctx.key_exists(paused.as_arg()) {
            q.ctx.set_call(c"SISMEMBER", paused.as_arg(), word(Word::Zero))?;
            Some(paused)
        } else {
            None
        };
        Ok(Claim {
            q,
            kind,
            ring,
            leases,
            active,
            limits: Cell::new(limits),
            weights,
            paused,
            rates,
            tats,
            next,
            held: Cell::new(None),
            time,
            passes: Cell::new(0),
            passed: RefCell::new(Vec::new()),
        })
    }

    /// One turn of a non-blocking claim: the reply when it served. Expired
    /// leases go back first (`emq.reap-on-claim`).
    pub fn turn(&self, deadline: i64) -> Result<Option<Reply>, Error> {
        self.return_first()?;
        self.head_turn(deadline)
    }

    /// The claim's returns before its turn: expired leases back, then lanes
    /// whose time in `P gnext` has come rung; whether either changed the
    /// ring. Each reads before it writes; the keys that the second, or the
    /// turn after them, could refuse whatever the lanes (`P wake`, `P
    /// pending`) and the head lane's keys are checked before the first
    /// writes. Only a row or a lane's set denied to the caller can refuse
    /// the turn after the returns wrote (docs/damage.md).
    pub fn return_first(&self) -> Result<bool, Error> {
        if !self.reap_due() && !self.lanes_due() {
            return Ok(false);
        }
        self.q.joinable()?;
        self.q.flat()?;
        if let Some(lane) = self.ring.list_get(0) {
            self.plan(&Text::new(lane))?;
        }
        let returned = self.reap_first()?;
        Ok(self.ring_due()? || returned)
    }

    /// Whether some lane's time in `P gnext` has come.
    fn lanes_due(&self) -> bool {
        next::any_due(self.next, self.q.ctx.now_ms())
    }

    /// Rings the lanes whose time in `P gnext` has come (a bounded number,
    /// as expired leases); whether any was rung.
    fn ring_due(&self) -> Result<bool, Error> {
        if !self.lanes_due() {
            return Ok(false);
        }
        let due = next::ring_due(self.q, config::reap_on_claim().max(1))?;
        if let Some(at) = due.wait {
            timer::due(self.q.ctx, self.q.prefix_bytes, at);
        }
        Ok(due.rung > 0)
    }

    /// The turn of the ring's head. Under fairness by time a head in debt is
    /// passed over and the next one taken, and once one was, a head that
    /// cannot serve does not end the claim: it never comes back empty while
    /// a lane could serve (at most `emq.max-passes` passes, then the next
    /// servable lane serves whatever its credit).
    fn head_turn(&self, deadline: i64) -> Result<Option<Reply>, Error> {
        let turns = match self.time {
            None => 1,
            Some(_) => self.ring.len() + config::max_passes() + 1,
        };
        for _ in 0..turns {
            let Some(lane) = self.ring.list_get(0) else {
                return Ok(None);
            };
            let lane = Text::new(lane);
            // Planned in place and applied by reference: a plan is too
            // large to move on every turn.
            let mut plan = plan::Plan::Drop;
            self.plan_into(&lane, &mut plan)?;
            match &plan {
                plan::Plan::Pass { credit } => self.pass(lane, *credit)?,
                _ => {
                    let served = self.apply(lane, &mut plan, deadline)?;
                    if served.is_some() || self.passes.get() == 0 {
                        return Ok(served);
                    }
                }
            }
        }
        Ok(None)
    }

    /// Whether the claim returns expired leases first: the config allows it
    /// and the queue's earliest lease has expired.
    fn reap_due(&self) -> bool {
        config::reap_on_claim() > 0 && self.leases.zset_has_at_most(self.q.ctx.now_ms() as f64)
    }

    /// Returns up to `emq.reap-on-claim` expired leases, counting each in its
    /// row's `stalled` (as EchoMQ's sweep does); whether any went back.
    fn reap_first(&self) -> Result<bool, Error> {
        if !self.reap_due() {
            return Ok(false);
        }
        let max = config::reap_on_claim();
        let sweep = Sweep {
            look: usize::MAX,
            max,
            passes: max,
            group: None,
            stalls: Stalls {
                count: true,
                max: returns::max_stalled(self.q, returns::OnDamage::Lenient)?,
            },
        };
        let returned = returns::return_expired(self.q, sweep)?;
        self.q
            .call
            .count(&stats::JOBS_REAPED_BY_CLAIMS, returned.ended() as u64);
        // A return may have made `P glimit`'s lanes matter again.
        self.limits.set(self.q.optional(Fixed::Limit, Kind::Hash)?);
        Ok(returned.ended() > 0)
    }

    /// The position in the ring of the first lane that would serve (read
    /// only: every lane up to it is opened and checked).
    pub fn first_servable(&self) -> Result<Option<usize>, Error> {
        for i in 0..self.ring.len() {
            let Some(lane) = self.ring.list_get(i as i64) else {
                break;
            };
            match self.plan(&Text::new(lane))? {
                plan if plan.serves() => return Ok(Some(i)),
                // In debt, it serves all the same once passed over.
                plan::Plan::Pass { .. } => return Ok(Some(i)),
                plan::Plan::Throttle { until } => {
                    self.held
                        .set(Some(self.held.get().map_or(until, |h| h.min(until))));
                }
                _ => {}
            }
        }
        Ok(None)
    }

    /// The earliest time a lane [`Claim::first_servable`] passed over for
    /// its rate may start, if it met one.
    pub fn held_until(&self) -> Option<i64> {
        self.held.get()
    }

    /// Serves the lane at ring position `first`, dropping and skipping the
    /// ones before it; nothing when there is none.
    pub fn serve_from(&self, first: Option<usize>, deadline: i64) -> Result<Option<Reply>, Error> {
        let Some(first) = first else {
            return Ok(None);
        };
        // The turns before it drop or skip lanes, or move a lane's strays:
        // none changes the state the servable lane was planned on (a lane met
        // twice plans the same both times), so the turn at `first` serves.
        for _ in 0..=first {
            if let Some(reply) = self.head_turn(deadline)? {
                return Ok(Some(reply));
            }
        }
        Ok(None)
    }

    /// The earliest lease deadline or time in `P gnext` (for the timer of a
    /// waiting claim).
    pub fn earliest(&self) -> Option<f64> {
        let lease = self.leases.zset_first_score();
        let next = self.next.and_then(|k| k.zset_first_score());
        [lease, next].into_iter().flatten().reduce(f64::min)
    }

    pub fn ring_name(&self) -> crate::ffi::Arg<'q> {
        self.ring.name()
    }
}

/// One served job, as the reply shows it.
pub use crate::ffi::Job as Served;

/// The reply of a served turn: one job's four fields flat (CLAIM), or an
/// array of them (WCLAIM, BCLAIM), each `[id, payload, attempts, lane]`.
pub fn claim_reply(kind: ClaimKind, lane: Text, served: crate::ffi::Jobs) -> Reply {
    let flat = kind == ClaimKind::One && served.len() == 1;
    Reply::Jobs {
        lane,
        jobs: served,
        flat,
    }
}
