//! The per-lane figures (SPEC section 8; docs/commands.md, "EMQ.STATS"),
//! recorded where a turn is decided and where a lease ends, into a store in
//! this server's memory: nothing in the keyspace, nothing written or
//! replicated, and nothing recorded by a replica or an AOF load (their calls
//! do not count). The arithmetic is `model::figures`; `view.rs` answers
//! EMQ.STATS.

mod view;

use std::cell::RefCell;

use crate::model::cluster::{in_ranges, key_slot};
use crate::model::figures::{Clock, Keep, Store};
use crate::model::schedule::Clamp;
use crate::queue::Queue;
use crate::runtime::config;

pub use crate::model::figures::Served;
pub use view::{lane_stats, lanes_stats, queue_stats, By};

thread_local! {
    static STORE: RefCell<Store> = RefCell::new(Store::default());
}

fn clock(q: &Queue) -> Clock {
    Clock::new(q.ctx.now_ms(), config::stats_window())
}

/// A claim turn on `lane`: decided by `clamp`, it leased `served` (none: a
/// turn at its ceiling or throttled); `time`: under fairness by time (its
/// leases are kept though no figures are).
pub fn turn(q: &Queue, lane: &[u8], clamp: Clamp, served: &[Served], time: bool) {
    if !q.call.records() {
        return;
    }
    let (at, clock) = ((q.ctx.db(), q.prefix_bytes), clock(q));
    let keep = Keep {
        lanes: config::stats_lanes(),
        time,
    };
    STORE.with(|s| s.borrow_mut().turn(at, lane, clock, clamp, served, keep));
}

/// The lease of `job`, of `lane`, ended at `end_ms` (its deadline for an
/// expired one): the worker time its job used, if the module granted it
/// (docs/commands.md, "EMQ.STATS": from the turn's previous end).
pub fn lease_ended(q: &Queue, lane: &[u8], job: &[u8], end_ms: i64) -> Option<u64> {
    if !q.call.records() {
        return None;
    }
    let (at, clock) = ((q.ctx.db(), q.prefix_bytes), clock(q));
    STORE.with(|s| {
        s.borrow_mut()
            .lease_ended(at, lane, job, (end_ms, clock), config::stats_lanes())
    })
}

/// EMQ.STATS P RESET.
pub fn reset(q: &Queue) {
    STORE.with(|s| s.borrow_mut().reset(q.ctx.db(), q.prefix_bytes));
}

/// The queues of `slots` (inclusive ranges) left this server by an atomic
/// slot migration: their figures go with nothing (they are not in the
/// keyspace; the new owner counts from the move).
pub fn forget_slots(slots: &[(u16, u16)]) {
    STORE.with(|s| s.borrow_mut().forget(|prefix| in_ranges(key_slot(prefix), slots)));
}

/// `INFO emq`: lanes and leases tracked, and the bytes the figures hold.
pub fn info() -> (usize, usize, usize) {
    with(|s| (s.lanes_tracked(), s.leases_tracked(), s.bytes()))
}

/// Forgets every figure (at unload: an unloaded module keeps nothing).
pub fn clear() {
    STORE.with(|s| s.borrow_mut().clear());
}

/// Reads the store, within the bound in force (`emq.stats-lanes` may have
/// been lowered since the last record).
fn with<R>(f: impl FnOnce(&Store) -> R) -> R {
    STORE.with(|s| {
        s.borrow_mut().keep_within(config::stats_lanes());
        f(&s.borrow())
    })
}
