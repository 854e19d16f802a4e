//! What a turn will do with the head lane, decided from reads only: drop it,
//! skip it (its own state is damaged), or serve it — which heads are leased
//! with which tokens, which are strays and where they go (docs/damage.md,
//! "Strays").

use smallvec::SmallVec;

use crate::ffi::{word, Arg, Key, Kind, RStr, Text, Word};
use crate::model::error::Error;
use crate::model::grammar::parse_i64;
use crate::model::rate::{parse_tat, Rate};
use crate::model::row::{head_fate, Fate, Home};
use crate::model::schedule::{self, Charge, Clamp, Damage, Head, Lane, RateRead, Stored, TimeRead, Turn};
use crate::runtime::config;

use super::Claim;

/// Heads a turn looks at beyond its K, at most: strays are removed on the
/// way, a bounded number per call (the next turn goes on).
const STRAY_BUDGET: usize = 1000;

/// What a turn does with its lane. One lives on the stack per turn: boxing
/// `Serving` would allocate on every claim.
#[allow(clippy::large_enum_variant)]
pub enum Plan<'q> {
    Drop,
    /// At its ceiling: dropped as [`Plan::Drop`], a turn the ceiling decided.
    Full,
    Skip(Damage),
    /// Its rate allows no start now: out of the ring, into `P gnext` until
    /// `until` (ms).
    Throttle {
        until: i64,
    },
    /// Under fairness by time, in debt once topped up to `credit`: passed
    /// over.
    Pass {
        credit: i64,
    },
    Serve(Serving<'q>),
}

impl Plan<'_> {
    /// Whether the turn leases at least one job.
    pub fn serves(&self) -> bool {
        matches!(self, Plan::Serve(s) if !s.leased.is_empty())
    }
}

pub struct Serving<'q> {
    pub pending: Key<'q>,
    /// The turn's K (what a replica replays).
    pub k: i64,
    /// What decided K.
    pub clamp: Clamp,
    /// Leased, in ZPOPMIN order.
    pub leased: Heads<'q>,
    /// Most often none: a vector allocates only when there are some.
    pub strays: Vec<Stray<'q>>,
    /// The lane's count after the turn.
    pub new_active: i64,
    /// The lane leaves the ring after the turn.
    pub leaves: bool,
    /// The rate's state after the turn, when the lane has a rate.
    pub rate: Option<RateAfter>,
    /// Under fairness by time: the credit topped up and each job's charge.
    pub time: Option<Charge>,
    /// The turn takes the lane's last job (a positive credit is then
    /// forgotten: no banking of idle time).
    pub empties: bool,
}

/// A rated lane after its turn: its new arrival time (µs), and when it is
/// left throttled, the time (ms) its next start is allowed.
#[derive(Clone, Copy)]
pub struct RateAfter {
    pub tat: i64,
    pub throttled_until: Option<i64>,
}

/// The heads a turn leases: two on the stack (a K=1 turn, the common one,
/// allocates nothing).
pub type Heads<'q> = SmallVec<[Leased<'q>; 2]>;

pub struct Leased<'q> {
    pub job: Text,
    pub row: Key<'q>,
    /// The job's new attempts: its token.
    pub attempts: i64,
    pub payload: Option<RStr>,
}

pub struct Stray<'q> {
    pub job: Text,
    pub to: StrayTo<'q>,
}

pub enum StrayTo<'q> {
    /// Out of the lane only: it is elsewhere already, or has no row.
    Nowhere,
    /// To `P pending`: its row names no lane.
    Flat(Key<'q>),
    /// To the lane its row names; that lane's state before, when sound.
    Lane {
        name: RStr,
        set: Key<'q>,
        before: Option<Lane>,
    },
}

impl<'q> Claim<'q> {
    /// Reads a stored number of the lane: absent, an integer, or damaged.
    fn stored(hash: Option<Key>, lane: Arg) -> Stored {
        match hash.and_then(|h| h.hash_get(lane)) {
            None => Ok(None),
            Some(v) => parse_i64(v.bytes()).map(Some).ok_or(()),
        }
    }

    /// Reads the lane's rate and arrival time: `Ok(None)` with no rate,
    /// `Err` when either is damaged.
    fn rate(&self, lane: Arg) -> RateRead {
        match self.rates {
            None => Ok(None),
            Some(rates) => self.rate_of(rates, lane),
        }
    }

    /// [`Claim::rate`] of a queue with rates; out of line, as
    /// [`Claim::rehome`].
    #[inline(never)]
    fn rate_of(&self, rates: Key<'q>, lane: Arg) -> RateRead {
        let Some(text) = rates.hash_get(lane) else {
            return Ok(None);
        };
        let rate = Rate::parse(text.bytes()).ok_or(())?;
        let tat = match self.tats.and_then(|h| h.hash_get(lane)) {
            None => None,
            Some(text) => Some(parse_tat(text.bytes()).ok_or(())?),
        };
        Ok(Some((rate, tat)))
    }

    /// Decides the turn of `lane` (read only).
    pub fn plan(&self, lane: &Text) -> Result<Plan<'q>, Error> {
        let mut plan = Plan::Drop;
        self.plan_into(lane, &mut plan)?;
        Ok(plan)
    }

    /// [`Claim::plan`], into `out` (a turn's own plan: built where it is
    /// used, as a plan is too large to return and move on every turn).
    /// On an error `out` may be half built: it is not to be applied.
    pub fn plan_into(&self, lane: &Text, out: &mut Plan<'q>) -> Result<(), Error> {
        let name = lane.bytes();
        if name.is_empty() {
            *out = Plan::Drop;
            return Ok(());
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
            weight: Self::stored(self.weights, lane_arg),
            limit: Self::stored(self.limits.get(), lane_arg),
            active: Self::stored(Some(self.active), lane_arg),
            paused,
            rate: self.rate(lane_arg),
            now_us: self.q.ctx.now_ms().saturating_mul(1000),
            time: self.time.map(|t| TimeRead {
                quantum_ms: t.quantum_ms,
                credit: Self::stored(t.credits, lane_arg),
                cost: Self::stored(t.costs, lane_arg),
                forced: self.passes.get() >= config::max_passes()
                    || self.passed.borrow().iter().any(|p| **p == *name),
            }),
        };
        let serves = match schedule::head_turn(&head, self.kind, config::max_claim()) {
            Turn::Serve { k, clamp, lane, time } => Ok((k, clamp, lane, time)),
            Turn::Drop => Err(Plan::Drop),
            Turn::Full => Err(Plan::Full),
            Turn::Skip(damage) => Err(Plan::Skip(damage)),
            Turn::Throttle { until } => Err(Plan::Throttle { until }),
            Turn::Pass { credit } => Err(Plan::Pass { credit }),
        };
        let (k, clamp, state, time) = match serves {
            Ok(serves) => serves,
            Err(plan) => {
                *out = plan;
                return Ok(());
            }
        };
        *out = Plan::Serve(Serving {
            pending,
            k,
            clamp,
            leased: Heads::new(),
            strays: Vec::new(),
            new_active: state.active,
            leaves: false,
            rate: None,
            time,
            empties: false,
        });
        let Plan::Serve(s) = out else {
            return Ok(());
        };
        if !self.take_heads(name, s, state.depth)? {
            *out = Plan::Skip(Damage::Attempts);
            return Ok(());
        }
        let leased = s.leased.len() as i64;
        let consumed = s.leased.len() as u64 + s.strays.len() as u64;
        s.rate = match head.rate {
            Ok(Some((rate, tat))) if leased > 0 => {
                let tat = rate.after(tat, head.now_us, leased);
                let spent = rate.allowed(Some(tat), head.now_us) == 0;
                Some(RateAfter {
                    tat,
                    throttled_until: spent.then(|| rate.next_start_ms(tat)),
                })
            }
            _ => None,
        };
        let throttled = s.rate.is_some_and(|r| r.throttled_until.is_some());
        s.new_active = state.active + leased;
        s.leaves = throttled || schedule::leaves_after(&state, consumed, leased);
        s.empties = consumed >= state.depth;
        Ok(())
    }

    /// The heads a turn takes from `lane` into `s`: up to `s.k` to lease,
    /// and the strays met before the last of them (at most `STRAY_BUDGET`
    /// more heads looked at). False when the first head to lease has
    /// attempts that cannot be counted (the lane is damaged); heads after
    /// such a one wait.
    pub(super) fn take_heads(&self, lane: &[u8], s: &mut Serving<'q>, depth: u64) -> Result<bool, Error> {
        let q = self.q;
        let (pending, leased, strays) = (s.pending, &mut s.leased, &mut s.strays);
        let want = usize::try_from(s.k).unwrap_or(usize::MAX);
        let budget = want.saturating_add(STRAY_BUDGET);
        let mut looked = 0usize;
        let mut window = want;
        'read: loop {
            let heads = pending.zset_range(f64::INFINITY, window);
            let seen = heads.len();
            for (job, _) in heads.into_iter().skip(looked) {
                looked += 1;
                let job = Text::new(job);
                let row = q.row_or_none(job.bytes())?;
                match head_fate(lane, &row.view()) {
                    Fate::Lease(attempts) => {
                        let payload = row.key.hash_get(word(Word::Payload));
                        leased.push(Leased {
                            job,
                            row: row.key,
                            attempts,
                            payload,
                        });
                    }
                    Fate::Damaged if leased.is_empty() => return Ok(false),
                    Fate::Damaged => break 'read,
                    Fate::Stray(home) => {
                        if let Some(to) = self.stray_to(home)? {
                            strays.push(Stray { job, to });
                        }
                    }
                }
                if leased.len() >= want || looked >= budget {
                    break 'read;
                }
            }
            if seen < window || window as u64 >= depth {
                break;
            }
            window = window.saturating_mul(2).min(budget);
        }
        Ok(true)
    }

    /// Where a stray goes; `None` when its lane cannot take it (its pending
    /// key holds another type): it stays where it is. Out of line, as
    /// [`Claim::rehome`].
    #[cold]
    #[inline(never)]
    fn stray_to(&self, home: Home) -> Result<Option<StrayTo<'q>>, Error> {
        let q = self.q;
        Ok(Some(match home {
            Home::Elsewhere => StrayTo::Nowhere,
            Home::Flat => StrayTo::Flat(q.flat()?),
            Home::Lane(other) => {
                // The stray's lane may join the ring with it.
                q.joinable()?;
                let set = match q.pending_zset(other) {
                    Ok(set) => set,
                    Err(Error::WrongType) => return Ok(None),
                    Err(e) => return Err(e),
                };
                let name = q.ctx.string(other);
                let read = q.lane_read(name.as_arg());
                read.paused.clone()?;
                StrayTo::Lane {
                    before: read.lane_or_damage()?.ok().filter(|l| l.active >= 0),
                    name,
                    set,
                }
            }
        }))
    }
}
