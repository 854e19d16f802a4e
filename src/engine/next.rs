//! Lanes coming back from `P gnext` (docs/commands.md, "EMQ.RATE"): a
//! throttled lane whose next start has come, or a lane paused until a time
//! that has come, leaves `P gnext` and is rung (with a wake) if serviceable
//! — by the first claim after it, bounded, and by the timer while clients
//! wait.

use crate::ffi::{Key, Kind};
use crate::model::error::Error;
use crate::model::layout::Fixed;
use crate::model::schedule::Lane;
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
    q.joinable()?;
    let due = next.zset_range(q.ctx.now_ms() as f64, max);
    // Each lane read before the first write. A lane whose state is damaged
    // is left out of the ring (docs/damage.md); one the caller may not
    // touch refuses the command.
    let mut back = Vec::with_capacity(due.len());
    for (lane, _) in &due {
        let lane = lane.as_arg();
        let paused = q.is_paused(lane)?;
        let after = q.lane_read(lane).lane_or_damage()?.ok().map(|before| Lane {
            paused: false,
            throttled: false,
            ..before
        });
        back.push((lane, paused, after));
    }
    for (lane, paused, after) in back {
        q.zrem(next, &[lane], c"zrem");
        if paused {
            q.paused_set(lane, false)?;
        }
        if let Some(after) = after {
            q.settle(lane, after.serviceable())?;
        }
    }
    q.call.count(&stats::LANES_RETURNED, due.len() as u64);
    Ok(due.len())
}
