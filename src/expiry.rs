//! The expiry timer of waiting clients (SPEC, "Blocking"): while clients
//! wait on a queue, the leases of that queue that expire are returned at
//! their deadline (as EMQ.REAP returns them), so that the lanes this rings
//! wake the waiters. Nothing else would: a lease that expires changes no key.
//!
//! One watch per waited-on queue (database and prefix), counting its
//! waiters, with at most one timer, set for the queue's earliest lease
//! deadline. A claim that makes a lease on a watched queue sets the timer
//! earlier if it must. The timer returns what has expired (on a primary
//! that is not loading; replicated as REAP's effects), then sets itself for
//! the next deadline while anyone still waits. The last waiter to leave
//! stops it; unloading the module stops them all.
//!
//! Everything here runs on the server's main thread.

use std::cell::{Cell, RefCell};

use rustc_hash::FxHashMap as HashMap;

use crate::commands::release::{self, OnDamagedLane};
use crate::commands::Call;
use crate::ffi::block::TimerId;
use crate::ffi::Ctx;
use crate::queue::Queue;
use crate::stats;

/// Leases one firing returns at most; more left expired sets the timer for
/// right away.
const BATCH: usize = 1000;

/// How long a timer waits to try again when it may not write now (writes
/// paused) or could not (damage to a queue-wide key, logged).
const RETRY_MS: i64 = 100;

struct Watch {
    db: i32,
    prefix: Vec<u8>,
    waiters: usize,
    /// The timer and the deadline (ms) it is set for.
    timer: Option<(TimerId, i64)>,
}

/// The watches, by id and by queue: a served claim finds its queue's watch
/// in O(1), however many queues have waiters.
#[derive(Default)]
struct Watches {
    by_id: HashMap<u64, Watch>,
    by_queue: HashMap<i32, HashMap<Box<[u8]>, u64>>,
}

impl Watches {
    fn find(&self, db: i32, prefix: &[u8]) -> Option<u64> {
        self.by_queue.get(&db)?.get(prefix).copied()
    }

    fn get_mut(&mut self, id: u64) -> Option<&mut Watch> {
        self.by_id.get_mut(&id)
    }

    fn remove(&mut self, id: u64) -> Option<Watch> {
        let watch = self.by_id.remove(&id)?;
        if let Some(queues) = self.by_queue.get_mut(&watch.db) {
            queues.remove(watch.prefix.as_slice());
            if queues.is_empty() {
                self.by_queue.remove(&watch.db);
            }
        }
        Some(watch)
    }
}

thread_local! {
    static WATCHES: RefCell<Watches> = RefCell::new(Watches::default());
    static NEXT_ID: Cell<u64> = const { Cell::new(1) };
}

/// How many timers are set (INFO emq).
pub fn running() -> usize {
    WATCHES.with(|w| w.borrow().by_id.values().filter(|w| w.timer.is_some()).count())
}

/// A client begins to wait on the queue `prefix` of the context's database,
/// whose earliest lease deadline is `earliest`. Returns the watch's id (for
/// [`unwatch`]).
pub fn watch(ctx: &Ctx, prefix: &[u8], earliest: Option<f64>) -> u64 {
    let db = ctx.db();
    let id = WATCHES.with(|w| {
        let mut watches = w.borrow_mut();
        if let Some(id) = watches.find(db, prefix) {
            if let Some(found) = watches.get_mut(id) {
                found.waiters += 1;
            }
            return id;
        }
        let id = NEXT_ID.with(|n| n.replace(n.get() + 1));
        watches.by_id.insert(
            id,
            Watch {
                db,
                prefix: prefix.to_vec(),
                waiters: 1,
                timer: None,
            },
        );
        watches.by_queue.entry(db).or_default().insert(prefix.into(), id);
        id
    });
    if let Some(at) = earliest {
        arm(ctx, id, at as i64);
    }
    id
}

/// A waiter left (served, timed out, gone): the last one stops the timer.
pub fn unwatch(ctx: Option<&Ctx>, id: u64) {
    let stop = WATCHES.with(|w| {
        let mut watches = w.borrow_mut();
        let watch = watches.get_mut(id)?;
        watch.waiters = watch.waiters.saturating_sub(1);
        if watch.waiters > 0 {
            return None;
        }
        watches.remove(id)?.timer.map(|(timer, _)| timer)
    });
    if let (Some(timer), Some(ctx)) = (stop, ctx) {
        ctx.stop_timer(timer);
    }
}

/// A claim leased jobs of `prefix` until `deadline`: if clients wait on that
/// queue, the timer must fire by then.
pub fn leased(ctx: &Ctx, prefix: &[u8], deadline: i64) {
    let db = ctx.db();
    let id = WATCHES.with(|w| {
        let watches = w.borrow();
        if watches.by_id.is_empty() {
            return None;
        }
        watches.find(db, prefix)
    });
    if let Some(id) = id {
        arm(ctx, id, deadline);
    }
}

/// Sets watch `id`'s timer for `at` (ms) unless it is set for sooner.
fn arm(ctx: &Ctx, id: u64, at: i64) {
    let old = WATCHES.with(|w| w.borrow().by_id.get(&id).map(|watch| watch.timer));
    let Some(old) = old else { return };
    if old.is_some_and(|(_, set)| set <= at) {
        return;
    }
    if let Some((timer, _)) = old {
        ctx.stop_timer(timer);
    }
    let timer = ctx.start_timer(at.saturating_sub(ctx.now_ms()).max(0), fire, id);
    WATCHES.with(|w| {
        if let Some(watch) = w.borrow_mut().get_mut(id) {
            watch.timer = Some((timer, at));
        }
    });
}

/// The timer of watch `id` fired: return the queue's expired leases, then
/// set the timer for the next deadline while clients still wait.
fn fire(ctx: &mut Ctx, id: u64) {
    let found = WATCHES.with(|w| {
        let mut watches = w.borrow_mut();
        let watch = watches.get_mut(id)?;
        watch.timer = None;
        (watch.waiters > 0).then(|| (watch.db, watch.prefix.clone()))
    });
    let Some((db, prefix)) = found else { return };
    // A replica's keyspace is its primary's; a loading server's is not yet
    // anyone's. Neither returns leases (a promoted replica's own waiters
    // set their own timers).
    if !ctx.is_primary_serving() || !ctx.select_db(db) {
        return;
    }
    let ctx = &*ctx;
    if ctx.writes_paused() {
        // Not now: the pause must see no writes (and the server aborts on
        // one with the AOF on or a replica attached). Again soon.
        arm(ctx, id, ctx.now_ms().saturating_add(RETRY_MS));
        return;
    }
    stats::TIMER_FIRINGS.add(1);
    let call = Call::new(ctx, false);
    let prefix_arg = ctx.string(&prefix);
    let q = Queue::internal(&call, prefix_arg.as_arg());
    let now = ctx.now_ms();
    let next = match release::reap_expired(&q, BATCH, OnDamagedLane::ReturnJobs) {
        // More may have expired than one firing returns: go on right away.
        Ok(reaped) if reaped.len() >= BATCH => {
            call.count(&stats::JOBS_REAPED_BY_TIMER, reaped.len() as u64);
            Some(now as f64)
        }
        Ok(reaped) => {
            call.count(&stats::JOBS_REAPED_BY_TIMER, reaped.len() as u64);
            // The next deadline still to come: an expired lease left in
            // place (its lane's state is damaged) is not a reason to fire
            // again at once, which would spin while clients wait.
            q.leases().ok().and_then(|l| l.zset_first_score_above(now as f64))
        }
        Err(e) => {
            q.report(|| {
                format!(
                    "the expiry timer could not return leases (it tries again): {}",
                    e.message().unwrap_or_default()
                )
            });
            // Damage an operator may mend while clients wait: try again,
            // not at once (that would spin), but soon.
            Some((now + 10 * RETRY_MS) as f64)
        }
    };
    if let Some(next) = next {
        arm(ctx, id, next as i64);
    }
}

/// Stops every timer (at module unload).
pub fn stop_all(ctx: &Ctx) {
    let timers: Vec<TimerId> = WATCHES.with(|w| {
        // The maps' memory too: an unloaded module keeps nothing.
        let watches = std::mem::take(&mut *w.borrow_mut());
        watches
            .by_id
            .into_values()
            .filter_map(|w| w.timer.map(|t| t.0))
            .collect()
    });
    for timer in timers {
        ctx.stop_timer(timer);
    }
}
