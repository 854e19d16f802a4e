//! Fairness by time (SPEC section 10; docs/commands.md, "EMQ.POLICY"): a
//! weight as a share of worker time, by deficit round robin over the
//! weighted turn's K. A lane met at the head of the ring gets `weight ×
//! quantum` of credit (µs); in debt, it is passed over; else it is served
//! `K = max(1, ⌊credit / cost⌋)` (the other clamps aside) and charged `K ×
//! cost` at once, its cost being the mean time its jobs held (µs). When a
//! lease ends, the charge is corrected by the time the job used, and the
//! cost moves toward it. The arithmetic, no server.

/// The quantum when EMQ.POLICY gives none (ms).
pub const QUANTUM_DEFAULT_MS: i64 = 100;
/// The largest quantum (ms): 2^31.
pub const QUANTUM_MAX_MS: i64 = 1 << 31;

/// The queue's fairness policy (`P meta` `fairness`, `quantum`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fairness {
    /// EchoMQ's rule: a weight is jobs per turn (the default).
    Count,
    /// A weight is a share of worker time.
    Time { quantum_ms: i64 },
}

impl Fairness {
    /// The policy stored as `fairness` and `quantum`: absent is `Count`; a
    /// value the module does not write is `None` (damage).
    pub fn parse(fairness: Option<&[u8]>, quantum: Option<&[u8]>) -> Option<Fairness> {
        match fairness {
            None => Some(Fairness::Count),
            Some(b"time") => {
                let quantum_ms = match quantum {
                    None => QUANTUM_DEFAULT_MS,
                    Some(q) => super::grammar::parse_i64(q).filter(|q| (1..=QUANTUM_MAX_MS).contains(q))?,
                };
                Some(Fairness::Time { quantum_ms })
            }
            Some(_) => None,
        }
    }
}

/// A job's stamp in its row while leased under fairness by time: its turn's
/// claim time (ms) and what it was charged (µs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    pub claimed: i64,
    pub charged: i64,
}

impl Stamp {
    /// The row's `claimed` and `charged`; none when either is missing or
    /// not an integer (a lease no time turn granted).
    pub fn parse(claimed: Option<&[u8]>, charged: Option<&[u8]>) -> Option<Stamp> {
        Some(Stamp {
            claimed: super::grammar::parse_i64(claimed?)?,
            charged: super::grammar::parse_i64(charged?)?,
        })
    }

    /// The time a job used ending at `end_ms` when its turn's previous end
    /// is not known (a failover, a restart): all of it since the claim (an
    /// over-charge of the turn's earlier jobs' time, docs/commands.md).
    pub fn used_since_claim(&self, end_ms: i64) -> u64 {
        end_ms.saturating_sub(self.claimed).max(0) as u64
    }
}

/// A row's stamp as read: none, or one a lease's end removes — sound, or
/// damaged (a field missing or not an integer: no charge to correct).
pub type Stamped = Option<Result<Stamp, ()>>;

/// A lane's credit after it comes to the head: `weight × quantum` more.
pub fn top_up(credit: i64, weight: i64, quantum_ms: i64) -> i64 {
    credit.saturating_add(weight.saturating_mul(quantum_ms).saturating_mul(1000))
}

/// A lane's cost (µs a job) as stored, or the quantum's when it has none; at
/// least 1.
pub fn cost_or_default(stored: Option<i64>, quantum_ms: i64) -> i64 {
    stored.unwrap_or(quantum_ms.saturating_mul(1000)).max(1)
}

/// The jobs a credit pays for: `max(1, ⌊credit / cost⌋)` when the credit is
/// positive; 1 when a lane in debt is served anyway (the claim passed over
/// as many lanes as it may).
pub fn time_k(credit: i64, cost: i64) -> i64 {
    (credit / cost.max(1)).max(1)
}

/// The credit after `k` jobs are charged `cost` each.
pub fn charge(credit: i64, k: i64, cost: i64) -> i64 {
    credit.saturating_sub(k.saturating_mul(cost))
}

/// The credit once a job charged `charged` µs has used `used_ms`.
pub fn correct(credit: i64, used_ms: u64, charged: i64) -> i64 {
    let used = i64::try_from(used_ms).unwrap_or(i64::MAX).saturating_mul(1000);
    credit.saturating_sub(used.saturating_sub(charged))
}

/// The cost moved an eighth of the way toward `used_ms` (integer division
/// toward zero: in µs it converges to within 8).
pub fn next_cost(cost: i64, used_ms: u64) -> i64 {
    let used = i64::try_from(used_ms).unwrap_or(i64::MAX).saturating_mul(1000);
    cost.saturating_add(used.saturating_sub(cost) / 8).max(1)
}

/// A lane that empties keeps its debt and forgets a positive credit (no
/// banking of idle time).
pub fn emptied(credit: i64) -> i64 {
    credit.min(0)
}

#[cfg(test)]
mod tests;
