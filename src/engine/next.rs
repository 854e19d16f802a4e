//! Lanes coming back from `P gnext` (docs/commands.md, "EMQ.RATE"): a
//! throttled lane whose next start has come, or a lane paused until a time
//! that has come, leaves `P gnext` and is rung (with a wake) if serviceable
//! — by the first claim after it, bounded, and by the timer while clients
//! wait.

use crate::ffi::{Key, Kind};
use crate::model::error::Error;
use crate::model::layout::Fixed;
use crate::queue::Queue;
use crate::runtime::stats;

/// Whether some lane's time in `P gnext` has come.
pub fn any_due(next: Option<Key>, now_ms: i64) -> bool {
    next.is_some_and(|k| k.zset_has_at_most(now_ms as f64))
}

/// The lanes whose time in `P gnext` has come, up to `max`, out of it: a
/// paused one resumed, each rung (with a wake) if serviceable. The number
/// that came back.
pub fn ring_due(q: &Queue, max: usize) -> Result<usize, Error> {
    let Some(next) = q.optional(Fixed::Next, Kind::Zset)? else {
        return Ok(0);
    };
    // Every key a return may write, checked before the first write.
    q.ring()?;
    q.wake()?;
    let due = next.zset_range(q.ctx.now_ms() as f64, max);
    for (lane, _) in &due {
        let lane = lane.as_arg();
        let paused = q.is_paused(lane)?;
        q.zrem(next, &[lane], c"zrem");
        if paused {
            q.paused_set(lane, false)?;
        }
        // A lane whose state is damaged is left where it is (docs/damage.md).
        if let Ok(state) = q.lane(lane) {
            q.settle(lane, state.serviceable())?;
        }
    }
    q.call.count(&stats::LANES_RETURNED, due.len() as u64);
    Ok(due.len())
}
