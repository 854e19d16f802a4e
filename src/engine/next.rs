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

/// Where a lane whose time in `P gnext` has come goes.
enum Back {
    /// Rung if serviceable (its state read before the first write; `None`
    /// when damaged: left out of the ring, docs/damage.md).
    Ring(Option<Lane>),
    /// Its pause ended while its rate still holds it back: on in `P gnext`
    /// until its next start.
    Wait(i64),
    /// Paused by EchoMQ's `@gpause` while it waited for its rate: no timed
    /// pause ends, so it stays paused; its wait goes (RESUME reads the rate).
    Paused,
}

/// What [`ring_due`] did.
#[derive(Default)]
pub struct Due {
    /// The due lanes met (at most `max`).
    pub met: usize,
    /// Those of them that left `P gnext` for the ring (if serviceable): the
    /// only ones waiting clients need to hear about.
    pub rung: usize,
    /// The earliest time a lane kept in `P gnext` for its rate now waits
    /// for: the caller sees that waiting clients' timer fires by then.
    pub wait: Option<i64>,
}

/// The lanes whose time in `P gnext` has come, up to `max`: a paused one
/// resumed, each out of it and rung (with a wake) if serviceable, or kept
/// in it until its rate allows a start.
pub fn ring_due(q: &Queue, max: usize) -> Result<Due, Error> {
    let Some(next) = q.optional(Fixed::Next, Kind::Zset)? else {
        return Ok(Due::default());
    };
    // Every key a return may write, checked before the first write.
    q.joinable()?;
    let now = q.ctx.now_ms();
    let due = next.zset_range(now as f64, max);
    // Each lane read before the first write; one the caller may not touch
    // refuses the command.
    let mut lanes = Vec::with_capacity(due.len());
    for (lane, at) in &due {
        let lane = lane.as_arg();
        let paused = q.is_paused(lane)?;
        let back = match q.throttled_until(lane) {
            _ if paused && q.is_rate_wait(lane, *at as i64)? => Back::Paused,
            Err(e @ Error::NoPermission { .. }) => return Err(e),
            Ok(Some(at)) if at > now => Back::Wait(at),
            // A damaged rate is rung all the same: the claim that meets it
            // skips it and says why (docs/damage.md).
            Ok(_) | Err(_) => Back::Ring(q.lane_read(lane).lane_or_damage()?.ok()),
        };
        lanes.push((lane, paused, back));
    }
    let mut rung: usize = 0;
    let mut wait: Option<i64> = None;
    for (lane, paused, back) in lanes {
        match back {
            Back::Wait(at) => {
                q.wait_in_next(next, lane, at);
                wait = Some(wait.map_or(at, |w| w.min(at)));
            }
            Back::Ring(_) => {
                q.zrem(next, &[lane], c"zrem");
                rung += 1;
            }
            Back::Paused => {
                q.zrem(next, &[lane], c"zrem");
                continue;
            }
        }
        if paused {
            q.paused_set(lane, false)?;
        }
        if let Back::Ring(Some(before)) = back {
            let after = Lane {
                paused: false,
                throttled: false,
                ..before
            };
            q.settle(lane, after.serviceable())?;
        }
    }
    q.call.count(&stats::LANES_RETURNED, rung as u64);
    Ok(Due {
        met: due.len(),
        rung,
        wait,
    })
}
