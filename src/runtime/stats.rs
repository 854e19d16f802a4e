//! What `INFO emq` counts: the work clients asked for (a replica applying its
//! primary's stream, or an AOF being loaded, counts nothing), and the
//! module's own work (the timer).

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

/// Claim calls (CLAIM, WCLAIM, BCLAIM) that served at least one job.
pub static CLAIMS: Counter = Counter::new();
/// Claim calls that served nothing.
pub static CLAIMS_EMPTY: Counter = Counter::new();
pub static JOBS_CLAIMED: Counter = Counter::new();
pub static JOBS_ENQUEUED: Counter = Counter::new();
pub static JOBS_COMPLETED: Counter = Counter::new();
/// RETRY calls that delayed the job.
pub static JOBS_RETRIED: Counter = Counter::new();
pub static JOBS_DELAYED: Counter = Counter::new();
pub static JOBS_EXTENDED: Counter = Counter::new();
/// Leases returned by EMQ.REAP (every kind).
pub static JOBS_REAPED: Counter = Counter::new();
/// Leases returned by claims before their turn (`emq.reap-on-claim`).
pub static JOBS_REAPED_BY_CLAIMS: Counter = Counter::new();
/// Leases returned by the timer of waiting clients.
pub static JOBS_REAPED_BY_TIMER: Counter = Counter::new();
/// Scheduled jobs made pending by EMQ.PROMOTE.
pub static JOBS_PROMOTED: Counter = Counter::new();
/// Scheduled jobs made pending by the timer.
pub static JOBS_PROMOTED_BY_TIMER: Counter = Counter::new();
/// Jobs dead: by RETRY at their maximum, or of their stalls.
pub static JOBS_DIED: Counter = Counter::new();
pub static JOBS_REVIVED: Counter = Counter::new();
/// Head lanes a claim skipped because their own state is damaged.
pub static LANES_SKIPPED: Counter = Counter::new();
/// Heads a claim did not lease because their row is not the lane's.
pub static STRAYS: Counter = Counter::new();
/// Leases and schedule entries whose row was missing or elsewhere: removed
/// and nothing else written.
pub static ENTRIES_DROPPED: Counter = Counter::new();
/// Expired leases, due jobs and dead jobs a sweep met and left where they
/// were because their lane's state is damaged (each time it met one).
pub static ENTRIES_KEPT: Counter = Counter::new();
/// Clients waiting in a claim's BLOCK now.
pub static BLOCKED: Counter = Counter::new();
/// Head lanes a claim found throttled by their rate (out of the ring, into
/// `P gnext`), and lanes that came back from it.
pub static LANES_THROTTLED: Counter = Counter::new();
pub static LANES_RETURNED: Counter = Counter::new();
/// Head lanes a claim under fairness by time passed over for their debt.
pub static LANES_PASSED: Counter = Counter::new();
/// Timers set now (one at most per waited-on queue).
pub static TIMERS: Counter = Counter::new();
/// Times a timer fired (on a primary, for a queue with waiters).
pub static TIMER_FIRINGS: Counter = Counter::new();

/// `INFO emq` counters, in order.
pub fn fields() -> [(&'static str, u64); 26] {
    [
        ("claims", CLAIMS.get()),
        ("claims_empty", CLAIMS_EMPTY.get()),
        ("jobs_claimed", JOBS_CLAIMED.get()),
        ("jobs_enqueued", JOBS_ENQUEUED.get()),
        ("jobs_completed", JOBS_COMPLETED.get()),
        ("jobs_retried", JOBS_RETRIED.get()),
        ("jobs_delayed", JOBS_DELAYED.get()),
        ("jobs_extended", JOBS_EXTENDED.get()),
        ("jobs_reaped", JOBS_REAPED.get()),
        ("jobs_reaped_by_claims", JOBS_REAPED_BY_CLAIMS.get()),
        ("jobs_reaped_by_timer", JOBS_REAPED_BY_TIMER.get()),
        ("jobs_promoted", JOBS_PROMOTED.get()),
        ("jobs_promoted_by_timer", JOBS_PROMOTED_BY_TIMER.get()),
        ("jobs_died", JOBS_DIED.get()),
        ("jobs_revived", JOBS_REVIVED.get()),
        ("lanes_skipped", LANES_SKIPPED.get()),
        ("lanes_throttled", LANES_THROTTLED.get()),
        ("lanes_returned", LANES_RETURNED.get()),
        ("lanes_passed", LANES_PASSED.get()),
        ("strays", STRAYS.get()),
        ("entries_dropped", ENTRIES_DROPPED.get()),
        ("entries_kept", ENTRIES_KEPT.get()),
        ("blocked_clients", BLOCKED.get()),
        ("timers", TIMERS.get()),
        ("timer_firings", TIMER_FIRINGS.get()),
        ("jobs_dead_of_stalls", DEAD_OF_STALLS.get()),
    ]
}

/// Of [`JOBS_DIED`], those dead of their stalls.
pub static DEAD_OF_STALLS: Counter = Counter::new();
