//! This node's hold on a queue's slot (docs/production.md, "A cluster").
//!
//! Every `P…` key of a queue is in the prefix's slot, but the prefix itself
//! never exists as a key, so during a key-by-key migration the server sends
//! each EMQ command to the importing node (`-ASK`), where the queue is only
//! partly there; and the source's own timer and woken waiters would work on
//! keys as they leave. So while the slot is migrating or importing here, or
//! is served elsewhere, a command refuses with `-TRYAGAIN` and the timer
//! leaves the queue alone. The slots come from `CLUSTER NODES`, read on
//! every cron tick; a call that finds its slot not served here reads them
//! again before it refuses, and the timer and a woken waiter (which may
//! write where no client sent a command) read them first unless they were
//! read in the last [`FRESH_MS`].
//! Atomic slot migration (`CLUSTER MIGRATESLOTS`) opens no such state: the
//! source serves the slot until the target owns it.

use std::cell::RefCell;

use crate::ffi::Ctx;
use crate::model::cluster::{key_slot, Hold, View};
use crate::model::error::Error;

/// How old a view the timer and a woken waiter take (ms): many waiters
/// woken at once read `CLUSTER NODES` once.
pub const FRESH_MS: i64 = 10;

thread_local! {
    /// The view and when it was read (ms).
    static VIEW: RefCell<(Option<View>, i64)> = const { RefCell::new((None, i64::MIN)) };
}

/// Reads this node's slots again (cluster mode only).
pub fn refresh(ctx: &Ctx) {
    if !ctx.is_cluster() {
        return;
    }
    let view = ctx
        .text_call(c"CLUSTER", &[b"NODES"])
        .and_then(|text| View::parse(&String::from_utf8_lossy(&text)));
    VIEW.with(|v| *v.borrow_mut() = (view, ctx.now_ms()));
}

/// The slot's hold in the view, and the view's age (ms).
fn hold(ctx: &Ctx, slot: u16) -> (Option<Hold>, i64) {
    VIEW.with(|v| {
        let (view, read_ms) = &*v.borrow();
        (
            view.as_ref().map(|view| view.hold(slot)),
            ctx.now_ms().saturating_sub(*read_ms),
        )
    })
}

/// Whether a call may work on the queue `prefix` now: in cluster mode, its
/// slot must be served here with no key-by-key migration of it open.
/// `fresh`: read the slots first unless read within [`FRESH_MS`]. A call replayed from a primary, an AOF or
/// an atomic migration's stream is the keyspace's own history: never refused.
pub fn may_work(ctx: &Ctx, prefix: &[u8], fresh: bool) -> Result<(), Error> {
    if !ctx.is_cluster() || ctx.replayed() {
        return Ok(());
    }
    let slot = key_slot(prefix);
    let (held, age) = hold(ctx, slot);
    if held != Some(Hold::Serves) || (fresh && age > FRESH_MS) {
        refresh(ctx);
    }
    match hold(ctx, slot).0 {
        // No view (the text could not be read): the server's routing is
        // all there is to go by.
        Some(Hold::Serves) | None => Ok(()),
        Some(Hold::Moving | Hold::Elsewhere) => Err(Error::SlotMoving),
    }
}
