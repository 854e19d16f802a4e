//! What `INFO emq` counts: the work clients asked for (a replica applying its
//! primary's stream, or an AOF being loaded, counts nothing), and the
//! module's own work (the expiry timer).

use std::sync::atomic::{AtomicU64, Ordering};

pub struct Counter(AtomicU64);

impl Counter {
    const fn new() -> Counter {
        Counter(AtomicU64::new(0))
    }

    pub fn add(&self, n: u64) {
        self.0.fetch_add(n, Ordering::Relaxed);
    }

    pub fn sub(&self, n: u64) {
        self.0.fetch_sub(n, Ordering::Relaxed);
    }

    pub fn get(&self) -> u64 {
        self.0.load(Ordering::Relaxed)
    }
}

/// Claim calls (CLAIM and WCLAIM) that served at least one job.
pub static CLAIMS: Counter = Counter::new();
/// Claim calls that served nothing.
pub static CLAIMS_EMPTY: Counter = Counter::new();
pub static JOBS_CLAIMED: Counter = Counter::new();
pub static JOBS_ENQUEUED: Counter = Counter::new();
pub static JOBS_ACKED: Counter = Counter::new();
pub static JOBS_NACKED: Counter = Counter::new();
/// Leases returned by EMQ.REAP.
pub static JOBS_REAPED: Counter = Counter::new();
/// Leases returned by claims before their turn (`emq.reap-on-claim`).
pub static JOBS_REAPED_BY_CLAIMS: Counter = Counter::new();
/// Leases returned by the expiry timer of waiting clients.
pub static JOBS_REAPED_BY_TIMER: Counter = Counter::new();
pub static JOBS_EXTENDED: Counter = Counter::new();
pub static JOBS_DIED: Counter = Counter::new();
pub static JOBS_REVIVED: Counter = Counter::new();
/// Head lanes a claim skipped because their own state is damaged.
pub static LANES_SKIPPED: Counter = Counter::new();
/// Pending heads removed because the job was already leased or dead.
pub static DUPLICATES_DROPPED: Counter = Counter::new();
/// Leases dropped because their record was missing or damaged.
pub static RECORDS_DROPPED: Counter = Counter::new();
/// Clients waiting in a claim's BLOCK now.
pub static BLOCKED: Counter = Counter::new();
/// Times an expiry timer fired (on a primary, for a queue with waiters).
pub static TIMER_FIRINGS: Counter = Counter::new();

/// `INFO emq` counters, in order.
pub fn fields() -> [(&'static str, u64); 18] {
    [
        ("claims", CLAIMS.get()),
        ("claims_empty", CLAIMS_EMPTY.get()),
        ("jobs_claimed", JOBS_CLAIMED.get()),
        ("jobs_enqueued", JOBS_ENQUEUED.get()),
        ("jobs_acked", JOBS_ACKED.get()),
        ("jobs_nacked", JOBS_NACKED.get()),
        ("jobs_reaped", JOBS_REAPED.get()),
        ("jobs_reaped_by_claims", JOBS_REAPED_BY_CLAIMS.get()),
        ("jobs_reaped_by_timer", JOBS_REAPED_BY_TIMER.get()),
        ("jobs_extended", JOBS_EXTENDED.get()),
        ("jobs_died", JOBS_DIED.get()),
        ("jobs_revived", JOBS_REVIVED.get()),
        ("lanes_skipped", LANES_SKIPPED.get()),
        ("duplicates_dropped", DUPLICATES_DROPPED.get()),
        ("records_dropped", RECORDS_DROPPED.get()),
        ("blocked_clients", BLOCKED.get()),
        ("timers", crate::expiry::running() as u64),
        ("timer_firings", TIMER_FIRINGS.get()),
    ]
}
