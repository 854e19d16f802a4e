//! The timer of waiting clients (docs/commands.md, "BLOCK"): while clients
//! wait on a queue, its expired leases are returned at their deadline (as a
//! claim returns them, counting stalls) and its scheduled jobs promoted at
//! their due time (as EMQ.PROMOTE), so that the lanes this rings wake the
//! waiters, and lanes waiting in `P gnext` rung at their time (a throttled
//! lane's next start, a timed pause's end). Nothing else would: a time that
//! passes changes no key.
//!
//! One watch per waited-on queue (database and prefix), counting its
//! waiters, with at most one timer, set for the queue's earliest lease
//! deadline or due time. A command that makes a deadline or a due time on a
//! watched queue sets the timer earlier if it must. The timer does what has
//! come due (on a primary that is not loading; replicated as effects), then
//! sets itself for the next time while anyone still waits. The last waiter
//! to leave stops it; unloading the module stops them all.
//!
//! Everything here runs on the server's main thread.

use std::cell::{Cell, RefCell};

use rustc_hash::FxHashMap as HashMap;

use crate::ffi::block::TimerId;
use crate::ffi::Ctx;
use crate::model::row::Stalls;
use crate::queue::Queue;
use crate::runtime::{cluster, stats, Call};

use super::next::ring_due;
use super::promote::promote_due;
use super::returns::{max_stalled, return_expired, OnDamage, Sweep, PASSES};

/// Leases (and due jobs) one firing ends at most; more left sets the timer
/// for right away.
const BATCH: usize = 1000;

/// While clients wait, the timer looks at least this often (ms): a lease
/// deadline or a due time an EchoMQ script wrote (a script cannot set the
/// timer) is met within it.
const LOOK_MS: i64 = 1000;

/// How long a timer waits to try again when it may not write now (writes
/// paused) or could not (damage to a queue-wide key, logged).
const RETRY_MS: i64 = 100;

struct Watch {
    db: i32,
    prefix: Vec<u8>,
    waiters: usize,
    /// The timer and the deadline (ms) it is set for.
    timer: Option<(TimerId, i64)>,
    /// When to wake the waiters though no key changes: a lane in the ring
    /// whose rate held it back may start then (see [`wake_at`]).
    wake: Option<i64>,
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

/// A client begins to wait on the queue `prefix` of the context's database,
/// whose earliest lease deadline or due time is `earliest`. Returns the
/// watch's id (for [`unwatch`]).
pub fn watch(ctx: &Ctx, prefix: &[u8], earliest: Option<i64>) -> u64 {
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
                wake: None,
            },
        );
        watches.by_queue.entry(db).or_default().insert(prefix.into(), id);
        id
    });
    let look = ctx.now_ms().saturating_add(LOOK_MS);
    arm(ctx, id, earliest.map_or(look, |at| at.min(look)));
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
    if let Some(timer) = stop {
        // Without a context the timer fires later and finds no watch.
        if let Some(ctx) = ctx {
            ctx.stop_timer(timer);
        }
        stats::TIMERS.sub(1);
    }
}

/// A command made a lease deadline or a due time `at` on `prefix`: if clients
/// wait on that queue, the timer must fire by then.
pub fn due(ctx: &Ctx, prefix: &[u8], at: i64) {
    let id = WATCHES.with(|w| {
        let watches = w.borrow();
        if watches.by_id.is_empty() {
            return None;
        }
        watches.find(ctx.db(), prefix)
    });
    if let Some(id) = id {
        arm(ctx, id, at);
    }
}

/// A waiting claim passed over a lane in the ring that its rate holds back
/// until `at` (rung there by a rate-unaware script, so not in `P gnext`):
/// the waiters are woken then to look again. The claim could not move the
/// lane to `P gnext` itself: a wake-up that writes and keeps waiting aborts
/// Redis 7.0.
pub fn wake_at(ctx: &Ctx, prefix: &[u8], at: i64) {
    let db = ctx.db();
    let id = WATCHES.with(|w| {
        let mut watches = w.borrow_mut();
        let id = watches.find(db, prefix)?;
        let watch = watches.get_mut(id)?;
        watch.wake = Some(watch.wake.map_or(at, |w| w.min(at)));
        Some(id)
    });
    if let Some(id) = id {
        arm(ctx, id, at);
    }
}

/// Sets watch `id`'s timer for `at` (ms) unless it is set for sooner.
fn arm(ctx: &Ctx, id: u64, at: i64) {
    let old = WATCHES.with(|w| w.borrow().by_id.get(&id).map(|watch| watch.timer));
    let Some(old) = old else { return };
    if old.is_some_and(|(_, set)| set <= at) {
        return;
    }
    match old {
        Some((timer, _)) if ctx.stop_timer(timer) => {}
        _ => stats::TIMERS.add(1),
    }
    let timer = ctx.start_timer(at.saturating_sub(ctx.now_ms()).max(0), fire, id);
    WATCHES.with(|w| {
        if let Some(watch) = w.borrow_mut().get_mut(id) {
            watch.timer = Some((timer, at));
        }
    });
}

/// The timer of watch `id` fired: do what has come due, then set the timer
/// for the next time while clients still wait.
fn fire(ctx: &mut Ctx, id: u64) {
    let now = ctx.now_ms();
    let found = WATCHES.with(|w| {
        let mut watches = w.borrow_mut();
        let watch = watches.get_mut(id)?;
        if watch.timer.take().is_some() {
            stats::TIMERS.sub(1);
        }
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
    // Not while the queue's slot moves key by key (its keys are leaving or
    // arriving) or has left: its waiters are answered `MOVED` by the server.
    if ctx.writes_paused() || cluster::may_work(ctx, &prefix, true).is_err() {
        // Not now: the pause must see no writes (and the server aborts on
        // one with the AOF on or a replica attached). Again soon.
        arm(ctx, id, ctx.now_ms().saturating_add(RETRY_MS));
        return;
    }
    stats::TIMER_FIRINGS.add(1);
    // A wake that has come is taken; one still to come is kept.
    let (woken, wake) = WATCHES.with(|w| {
        let mut watches = w.borrow_mut();
        let wake = watches.get_mut(id).map(|watch| &mut watch.wake);
        wake.map_or((false, None), |wake| {
            (wake.take_if(|at| *at <= now).is_some(), *wake)
        })
    });
    let call = Call::new(ctx, false);
    let prefix_arg = ctx.string(&prefix);
    let q = Queue::internal(&call, prefix_arg.as_arg());
    if woken {
        q.wake_waiters();
    }
    let next = match due_work(&q) {
        // More may have come due than one firing ends: go on right away.
        Ok(true) => Some(now),
        Ok(false) => next_time(&q, now),
        Err(e) => {
            q.report(|| {
                format!(
                    "the timer could not return leases or promote jobs (it tries again): {}",
                    e.message().unwrap_or_default()
                )
            });
            // Damage an operator may mend while clients wait: try again,
            // not at once (that would spin), but soon.
            Some(now + 10 * RETRY_MS)
        }
    };
    let look = Some(now.saturating_add(LOOK_MS));
    if let Some(next) = [next, wake, look].into_iter().flatten().min() {
        arm(ctx, id, next);
    }
}

/// Returns the queue's expired leases, promotes its due jobs and rings its
/// lanes back from `P gnext`; whether a batch was full (more may be due).
fn due_work(q: &Queue) -> Result<bool, crate::model::error::Error> {
    let sweep = Sweep {
        look: usize::MAX,
        max: BATCH,
        passes: PASSES,
        group: None,
        stalls: Stalls {
            count: true,
            max: max_stalled(q, OnDamage::Lenient)?,
        },
    };
    let returned = return_expired(q, sweep)?;
    q.call
        .count(&stats::JOBS_REAPED_BY_TIMER, returned.ended() as u64);
    let promoted = promote_due(q, BATCH, PASSES)?;
    q.call
        .count(&stats::JOBS_PROMOTED_BY_TIMER, promoted.promoted as u64);
    // A lane kept in `P gnext` for its rate is met again by `next_time`.
    let back = ring_due(q, BATCH)?;
    if back.rung > 0 {
        // A lane already in the ring (rung by a script while it waited)
        // is not pushed again: its waiters are told all the same.
        q.wake_waiters();
    }
    Ok(returned.ended() >= BATCH || promoted.ended() >= BATCH || back.met >= BATCH)
}

/// The next lease deadline or due time still to come: one left in place (its
/// lane's state is damaged) is not a reason to fire again at once, which
/// would spin while clients wait.
fn next_time(q: &Queue, now: i64) -> Option<i64> {
    let after = |key: Result<crate::ffi::Key, _>| key.ok().and_then(|k| k.zset_first_score_above(now as f64));
    let lease = after(q.leases());
    let due = after(q.schedule());
    let back = after(q.next());
    [lease, due, back].into_iter().flatten().map(|t| t as i64).min()
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
        if ctx.stop_timer(timer) {
            stats::TIMERS.sub(1);
        }
    }
}
