//! Warnings about damaged state met while serving (a skipped lane, a dropped
//! lease record), written to the server's log at most once a second, with a
//! count of the ones left out: a damaged queue must not flood the log.

use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

use crate::ffi::Ctx;

static LAST_MS: AtomicI64 = AtomicI64::new(i64::MIN);
static LEFT_OUT: AtomicU64 = AtomicU64::new(0);

/// Logs `what` unless a warning was logged less than a second ago, or the
/// call is replayed (a primary's command on its replica, an AOF loading):
/// the primary logged it when it met the damage.
pub fn damage(ctx: &Ctx, what: impl FnOnce() -> String) {
    if ctx.replayed() {
        return;
    }
    let now = ctx.now_ms();
    let last = LAST_MS.load(Ordering::Relaxed);
    if last != i64::MIN && now.saturating_sub(last) < 1000 {
        LEFT_OUT.fetch_add(1, Ordering::Relaxed);
        return;
    }
    LAST_MS.store(now, Ordering::Relaxed);
    let left_out = LEFT_OUT.swap(0, Ordering::Relaxed);
    let mut msg = format!("emq: {}", what());
    if left_out > 0 {
        msg.push_str(&format!(
            " ({left_out} more such warnings in the last second were not logged)"
        ));
    }
    ctx.warn(&msg);
}
