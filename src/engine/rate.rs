//! Rates and timed pauses (docs/commands.md, "EMQ.RATE" and "EMQ.PAUSE"): a
//! lane that may not be served until a time waits in `P gnext` at that
//! time, out of the ring, and comes back by itself — rung by the first claim
//! after it (bounded, as expired leases are) or by the timer while clients
//! wait. A lane in `P gnext` that is also in `P paused` is paused until
//! then; one that is not is throttled by its rate until then.

use crate::ffi::{Arg, Key, Kind};
use crate::model::error::Error;
use crate::model::layout::Fixed;
use crate::model::rate::{parse_tat, Rate};
use crate::queue::Queue;

use super::lanes;
use super::timer;

/// EMQ.RATE: sets (`Some`) or removes the lane's rate. A damaged rate or
/// arrival time is what an operator sets a new rate to fix: the rate is
/// replaced, a damaged arrival time forgotten (no debt). Unless the lane is
/// paused, its place in `P gnext` and in the ring then follows its new rate;
/// a paused lane's wait for its old rate is forgotten (RESUME reads the new).
pub fn set_rate(q: &Queue, lane: Arg, rate: Option<Rate>) -> Result<(), Error> {
    q.joinable()?;
    let (rates, tats, next) = (q.rates()?, q.tats()?, q.next()?);
    let read = q.lane_read(lane);
    let paused = read.paused.clone()?;
    let state = read.lane_or_damage()?;
    // A paused lane's wait for its old rate (left by EchoMQ's `@gpause`)
    // would read as a timed pause under the new one: it goes.
    let old_wait = match next.zset_score(lane) {
        Some(at) if paused => q.is_rate_wait(lane, at as i64)?,
        _ => false,
    };
    // A timed pause's end (not a wait for the old rate).
    let pause_end = next
        .zset_score(lane)
        .map(|at| at as i64)
        .filter(|_| paused && !old_wait);
    let old = rates.hash_get(lane).and_then(|text| Rate::parse(text.bytes()));
    let now_us = q.ctx.now_ms().saturating_mul(1000);
    let mut tat = match tats.hash_get(lane) {
        None => None,
        Some(text) => match parse_tat(text.bytes()) {
            Some(tat) => Some(tat),
            None => {
                q.hdel(tats, &[lane]);
                None
            }
        },
    };
    match rate {
        Some(rate) => {
            let text = q.ctx.string(rate.format().as_bytes());
            q.hset(rates, &[(lane, text.as_arg())], c"hset");
            // The starts owed under the old rate are owed under the new.
            if let (Some(old), Some(before)) = (old, tat) {
                let carried = old.carry(&rate, before, now_us);
                if carried != before {
                    let text = q.ctx.string_from_i64(carried);
                    q.hset(tats, &[(lane, text.as_arg())], c"hset");
                    tat = Some(carried);
                }
            }
            // A timed pause never ends at the new rate's next start, which
            // would read as its wait (Queue::is_rate_wait): one ms later.
            if let (Some(end), Some(tat)) = (pause_end, tat) {
                if rate.next_start_ms(tat) == end {
                    wait_until(q, next, lane, end + 1);
                }
            }
        }
        None => {
            if rates.hash_has(lane) {
                q.hdel(rates, &[lane]);
            }
            if tat.is_some() {
                q.hdel(tats, &[lane]);
            }
        }
    }
    if old_wait {
        forget(q, next, lane);
    }
    if !paused {
        let until = rate
            .filter(|r| r.allowed(tat, now_us) == 0)
            .map(|r| r.next_start_ms(tat.unwrap_or(now_us)));
        match until {
            Some(at) => wait_until(q, next, lane, at),
            None => forget(q, next, lane),
        }
        if let Ok(state) = state {
            let throttled = until.is_some();
            q.settle(
                lane,
                crate::model::schedule::Lane { throttled, ..state }.serviceable(),
            )?;
        }
    }
    q.wake_waiters();
    Ok(())
}

/// EMQ.PAUSE: into `P paused`, out of the ring; with `FOR ms`, resumed by
/// the module at `now + ms`. A plain PAUSE cancels a timed one.
pub fn pause(q: &Queue, lane: Arg, for_ms: Option<i64>) -> Result<(), Error> {
    match for_ms {
        Some(ms) => {
            let next = q.next()?;
            let mut end = q.ctx.now_ms().saturating_add(ms);
            // Never at the time its rate's wait would have: that one is no
            // pause's end (Queue::is_rate_wait), one ms later is.
            if q.is_rate_wait(lane, end)? {
                end += 1;
            }
            lanes::pause(q, lane)?;
            wait_until(q, next, lane, end);
        }
        None => {
            let next = q.optional(Fixed::Next, Kind::Zset)?;
            lanes::pause(q, lane)?;
            if let Some(next) = next {
                forget(q, next, lane);
            }
        }
    }
    Ok(())
}

/// EMQ.RESUME: at once, a timed pause cancelled; a lane its rate still
/// holds back waits in `P gnext` for its next start instead of joining the
/// ring. A lane that is not paused keeps its place in `P gnext`: there it
/// waits for its rate, and comes back by itself.
pub fn resume(q: &Queue, lane: Arg) -> Result<(), Error> {
    q.joinable()?;
    // The lane and its rate error before the first write.
    if !q.lane(lane)?.paused {
        return Ok(());
    }
    let next = q.next()?;
    let until = q.throttled_until(lane)?;
    match until {
        Some(at) => wait_until(q, next, lane, at),
        None => forget(q, next, lane),
    }
    lanes::resume(q, lane)
}

/// `ZADD P gnext at lane`, and the timer of waiting clients fires by then.
pub fn wait_until(q: &Queue, next: Key, lane: Arg, at: i64) {
    q.wait_in_next(next, lane, at);
    timer::due(q.ctx, q.prefix_bytes, at);
}

fn forget(q: &Queue, next: Key, lane: Arg) {
    if next.zset_score(lane).is_some() {
        q.zrem(next, &[lane], c"zrem");
    }
}
