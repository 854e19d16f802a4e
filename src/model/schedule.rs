//! The scheduling rules over plain numbers: no server, no keys. When a lane
//! is serviceable, what one claim turn serves (`K = min(weight, depth,
//! headroom)`), and how the ring follows a change (docs/commands.md, "The
//! turn").

use super::credit;
use super::rate::Rate;

/// What the store says about one lane, as numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lane {
    /// Jobs waiting (`ZCARD` of its pending zset).
    pub depth: u64,
    /// Leased jobs (`gactive`; absent = 0).
    pub active: i64,
    /// Concurrency ceiling (`glimit`; absent = none).
    pub limit: Option<i64>,
    pub paused: bool,
    /// Its rate allows no start now, or it is paused until a time to come.
    pub throttled: bool,
}

impl Lane {
    /// Serviceable: non-empty, not paused, not throttled, and below its
    /// ceiling if it has one.
    pub fn serviceable(&self) -> bool {
        self.depth > 0 && !self.paused && !self.throttled && self.limit.is_none_or(|lim| self.active < lim)
    }
}

/// Which claim: how many heads a turn asks for before the clamps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimKind {
    /// EMQ.CLAIM (`@gclaim`): one head.
    One,
    /// EMQ.WCLAIM (`@gwclaim`): the lane's weight.
    Weighted,
    /// EMQ.BCLAIM (`@gbclaim`): the whole lane, up to its headroom.
    Batch,
}

/// The weight a claim uses: a stored weight below 1, or none, is 1.
pub fn effective_weight(stored: Option<i64>) -> i64 {
    match stored {
        Some(w) if w >= 1 => w,
        _ => 1,
    }
}

/// `K = min(want, depth, headroom)`, headroom being `limit − active` when a
/// ceiling is set. Zero or less means nothing can be served.
pub fn serve_count(want: i64, depth: u64, limit: Option<i64>, active: i64) -> i64 {
    let depth = i64::try_from(depth).unwrap_or(i64::MAX);
    let mut k = want.min(depth);
    if let Some(lim) = limit {
        // In i128: a ceiling near i64::MAX and a negative count must not wrap.
        let headroom = i128::from(lim) - i128::from(active);
        k = i128::from(k)
            .min(headroom)
            .clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    }
    k
}

/// Why a head lane is skipped: its own stored state is damaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// Its weight is not an integer.
    Weight,
    /// Its ceiling is not an integer.
    Limit,
    /// Its active count is not an integer, is negative, or would overflow.
    Active,
    /// Its pending key holds another type than a zset.
    PendingType,
    /// A head job's row holds `attempts` that is not an integer (or would
    /// overflow): the job cannot be fenced.
    Attempts,
    /// Its rate or its arrival time is not what it must be.
    Rate,
    /// Under fairness by time, its credit or cost is not an integer.
    Credit,
}

impl Damage {
    pub fn describe(self) -> &'static str {
        match self {
            Damage::Weight => "its weight is not an integer",
            Damage::Limit => "its limit is not an integer",
            Damage::Active => "its active count is not an integer >= 0 (or would overflow)",
            Damage::PendingType => "its pending key is not a zset",
            Damage::Attempts => "a head job's attempts is not an integer (or would overflow)",
            Damage::Rate => "its rate or arrival time is damaged",
            Damage::Credit => "its credit or cost is not an integer",
        }
    }
}

/// A stored number as a claim reads it: absent, an integer, or damaged.
pub type Stored = Result<Option<i64>, ()>;

/// What a claim reads of the lane at the head of the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub name_empty: bool,
    /// `None`: the pending key holds another type.
    pub depth: Option<u64>,
    /// `Ok(None)` for a claim that does not read the weight.
    pub weight: Stored,
    pub limit: Stored,
    pub active: Stored,
    pub paused: bool,
    /// Its rate and stored arrival time (`Ok(None)`: no rate); `Err` when
    /// either is damaged.
    pub rate: RateRead,
    /// The clock, in µs (what the rate is asked at).
    pub now_us: i64,
    /// Under fairness by time (WCLAIM, BCLAIM): its credit and cost.
    pub time: Option<TimeRead>,
}

/// A lane's credit and cost as a claim under fairness by time reads them
/// (`model::credit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRead {
    pub quantum_ms: i64,
    /// Its credit (µs; absent = 0) and cost (µs a job; absent = the
    /// quantum's); `Err` when either is not an integer.
    pub credit: Stored,
    pub cost: Stored,
    /// The claim has passed over as many lanes as it may: this one is served
    /// whatever its credit.
    pub forced: bool,
}

/// A lane's rate as a claim reads it.
pub type RateRead = Result<Option<(Rate, Option<i64>)>, ()>;

/// The clamp that decided a turn's K (SPEC section 8, the seed's "the
/// minimum wins"): of the bounds a turn takes the least of, the first in
/// this order that equals K. A turn at its ceiling or throttled serves
/// nothing under that clamp.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clamp {
    Weight,
    Depth,
    Ceiling,
    Rate,
    MaxClaim,
    /// EMQ.CLAIM: K is 1 by the command.
    One,
}

impl Clamp {
    pub const ALL: [Clamp; 6] = [
        Clamp::Weight,
        Clamp::Depth,
        Clamp::Ceiling,
        Clamp::Rate,
        Clamp::MaxClaim,
        Clamp::One,
    ];

    /// Its name in replies and metrics.
    pub fn name(self) -> &'static str {
        match self {
            Clamp::Weight => "weight",
            Clamp::Depth => "depth",
            Clamp::Ceiling => "ceiling",
            Clamp::Rate => "rate",
            Clamp::MaxClaim => "max-claim",
            Clamp::One => "one",
        }
    }
}

/// The clamp that decided `k` of `bounds` (each a clamp and its bound, if it
/// applies, in [`Clamp::ALL`]'s order; `k` is the least of them).
fn deciding(bounds: &[(Clamp, Option<i64>)], k: i64) -> Clamp {
    bounds
        .iter()
        .find_map(|(clamp, bound)| (*bound == Some(k)).then_some(*clamp))
        .unwrap_or(Clamp::Depth)
}

/// What one claim turn does with the lane at the head of the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// It cannot be served (empty name, empty, paused): it leaves the ring
    /// and nothing is served.
    Drop,
    /// It is at (or past) its ceiling: it leaves the ring and nothing is
    /// served (a turn the ceiling decided, with 0 jobs).
    Full,
    /// Its own state is damaged: it rotates to the tail untouched and nothing
    /// is served.
    Skip(Damage),
    /// Its rate allows no start now: it leaves the ring for `P gnext`, to
    /// come back at `until` (ms), and nothing is served.
    Throttle { until: i64 },
    /// Under fairness by time, its credit topped up (`credit`) is still not
    /// positive: it is passed over — rotated, its credit written, still in
    /// the ring — and the claim takes the next head.
    Pass { credit: i64 },
    /// Serve up to `k` heads (fewer when some are strays), `clamp` having
    /// decided `k`. The ring rotates first.
    /// Under fairness by time, `time` is the credit topped up and the cost
    /// each job is charged.
    Serve {
        k: i64,
        clamp: Clamp,
        lane: Lane,
        time: Option<Charge>,
    },
}

/// What a turn under fairness by time charges: its lane's credit once
/// topped up, and the cost charged for each job (µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Charge {
    pub credit: i64,
    pub cost: i64,
}

/// One claim turn for the head lane, its checks in the order `@gwclaim`
/// reads (name, depth, weight, ceiling, active count), the paused test
/// after the depth's, the rate last (an addition: docs/commands.md,
/// "EMQ.RATE"). `max_claim` caps a turn (`emq.max-claim`).
pub fn head_turn(head: &Head, claim: ClaimKind, max_claim: i64) -> Turn {
    if head.name_empty {
        return Turn::Drop;
    }
    let Some(depth) = head.depth else {
        return Turn::Skip(Damage::PendingType);
    };
    if depth == 0 || head.paused {
        return Turn::Drop;
    }
    let Ok(weight) = head.weight else {
        return Turn::Skip(Damage::Weight);
    };
    let Ok(limit) = head.limit else {
        return Turn::Skip(Damage::Limit);
    };
    let active = match head.active {
        Ok(a) if a.unwrap_or(0) >= 0 => a.unwrap_or(0),
        _ => return Turn::Skip(Damage::Active),
    };
    let cap = max_claim.max(1);
    // Under time the credit, not the weight, says how many.
    let time = head.time.filter(|_| claim != ClaimKind::One);
    let want = match claim {
        ClaimKind::One => 1,
        ClaimKind::Weighted if time.is_none() => effective_weight(weight).min(cap),
        _ => cap,
    };
    let mut k = serve_count(want, depth, limit, active);
    if k <= 0 {
        return Turn::Full;
    }
    let mut allowed = None;
    match head.rate {
        Err(()) => return Turn::Skip(Damage::Rate),
        Ok(None) => {}
        Ok(Some((rate, tat))) => match rate.allowed(tat, head.now_us) {
            0 => {
                return Turn::Throttle {
                    until: rate.next_start_ms(tat.unwrap_or(head.now_us)),
                }
            }
            n => {
                k = k.min(n);
                allowed = Some(n);
            }
        },
    }
    let mut charge = None;
    if let Some(t) = time {
        let (Ok(credit), Ok(cost)) = (t.credit, t.cost) else {
            return Turn::Skip(Damage::Credit);
        };
        let credit = credit::top_up(credit.unwrap_or(0), effective_weight(weight), t.quantum_ms);
        if credit <= 0 && !t.forced {
            return Turn::Pass { credit };
        }
        let cost = credit::cost_or_default(cost, t.quantum_ms);
        k = k.min(credit::time_k(credit, cost));
        charge = Some(Charge { credit, cost });
    }
    if active.checked_add(k).is_none() {
        return Turn::Skip(Damage::Active);
    }
    let depth_bound = i64::try_from(depth).unwrap_or(i64::MAX);
    let headroom = limit.map(|lim| lim.saturating_sub(active));
    let clamp = match claim {
        ClaimKind::One => Clamp::One,
        _ => {
            let weight = match (charge, claim) {
                (Some(c), _) => Some(credit::time_k(c.credit, c.cost)),
                (None, ClaimKind::Weighted) => Some(effective_weight(weight)),
                _ => None,
            };
            let bounds = [
                (Clamp::Weight, weight),
                (Clamp::Depth, Some(depth_bound)),
                (Clamp::Ceiling, headroom),
                (Clamp::Rate, allowed),
                (Clamp::MaxClaim, Some(cap)),
            ];
            deciding(&bounds, k)
        }
    };
    Turn::Serve {
        k,
        clamp,
        time: charge,
        lane: Lane {
            depth,
            active,
            limit,
            paused: false,
            throttled: false,
        },
    }
}

/// The re-ring guard, run once after a served turn: the lane leaves the ring
/// unless it is still serviceable, with `consumed` heads gone from its
/// pending set (leased or strays) and `leased` more active.
pub fn leaves_after(lane: &Lane, consumed: u64, leased: i64) -> bool {
    let after = Lane {
        depth: lane.depth.saturating_sub(consumed),
        active: lane.active.saturating_add(leased),
        ..*lane
    };
    !after.serviceable()
}

/// How a lane's ring membership follows a change, from its serviceability
/// before and after: the ring invariant without scanning the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingChange {
    /// Became serviceable: `RPUSH` it (and wake).
    Join,
    /// Stopped being serviceable: remove it.
    Leave,
    Stay,
}

pub fn ring_change(before: &Lane, after: &Lane) -> RingChange {
    match (before.serviceable(), after.serviceable()) {
        (false, true) => RingChange::Join,
        (true, false) => RingChange::Leave,
        _ => RingChange::Stay,
    }
}

#[cfg(test)]
mod tests;
