//! What `INFO emq` counts, and the `emq.max-claim` and `emq.replicate`
//! configs. Commands run on the server's main thread; atomics only make the
//! statics safe to share.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};

/// `emq.max-claim`: the most heads one claim turn serves, whatever the
/// weight, so that a huge weight cannot stall the server. The one place a
/// native claim may serve fewer heads than its Lua twin.
pub static MAX_CLAIM: AtomicI64 = AtomicI64::new(1000);

pub fn max_claim() -> i64 {
    MAX_CLAIM.load(Ordering::Relaxed).max(1)
}

/// `emq.replicate`: `effects` (false, the default: replicas and AOF readers
/// need no module) or `command` (true: claims replicate as one `EMQ.TURN`,
/// the clock-free commands as themselves; every reader needs the module).
pub static REPLICATE_COMMAND: AtomicBool = AtomicBool::new(false);

pub fn replicate_command() -> bool {
    REPLICATE_COMMAND.load(Ordering::Relaxed)
}

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
pub static JOBS_REAPED: Counter = Counter::new();
pub static JOBS_EXTENDED: Counter = Counter::new();
/// Clients waiting in a claim's BLOCK now.
pub static BLOCKED: Counter = Counter::new();

/// `INFO emq` fields, in order.
pub fn fields() -> [(&'static str, u64); 9] {
    [
        ("claims", CLAIMS.get()),
        ("claims_empty", CLAIMS_EMPTY.get()),
        ("jobs_claimed", JOBS_CLAIMED.get()),
        ("jobs_enqueued", JOBS_ENQUEUED.get()),
        ("jobs_acked", JOBS_ACKED.get()),
        ("jobs_nacked", JOBS_NACKED.get()),
        ("jobs_reaped", JOBS_REAPED.get()),
        ("jobs_extended", JOBS_EXTENDED.get()),
        ("blocked_clients", BLOCKED.get()),
    ]
}
