//! EMQ.REPAIR: lanes' bookkeeping re-derived after damage from outside (a
//! deleted ring, a hand-edited count). A lane's truth:
//! - its active count is the number of leases (`P active`) whose rows name
//!   it and say `active`;
//! - the ring holds it exactly once when serviceable, else not at all;
//! - unless paused (`P gnext` then holds a timed pause's end, left as it
//!   is), it waits in `P gnext` at its next start exactly when its rate
//!   allows no start now, and not at all otherwise.
//!
//! A lane whose ceiling, rate or pending key is damaged keeps its ring
//! membership and its place in `P gnext` (claims skip it) and the reply
//! names the damage; its active count is
//! still repaired, and so are the other lanes of the call. Many lanes share
//! one pass over the ring and the leases, so that `emq repair` over a large
//! queue costs O(R + L) per batch, not per lane.

use std::collections::HashMap;

use crate::ffi::{word, Arg, Kind, RStr, Reply, Word};
use crate::model::error::{quote, Error};
use crate::model::layout::{self, Fixed};
use crate::model::row::State;
use crate::model::schedule::RingChange;
use crate::queue::{stored_int, Queue};

use super::rate;

/// What one lane's repair finds.
struct Plan<'a> {
    lane: Arg<'a>,
    active_before: Option<RStr>,
    active_after: i64,
    /// Its ring positions, from the head.
    positions: Vec<usize>,
    serviceable: bool,
    /// Its time in `P gnext`, and the one it should have (the same when
    /// damaged).
    next_before: Option<i64>,
    next_after: Option<i64>,
    /// The lane's own state that REPAIR cannot re-derive (its ceiling not an
    /// integer, its pending key of another type): its ring membership is
    /// left as it is, as claims leave a damaged lane, and the reply says why.
    damaged: Option<String>,
}

impl Plan<'_> {
    fn active_changes(&self) -> bool {
        // Stored as HINCRBY would leave it: the integer, or no field at 0.
        let wanted = (self.active_after > 0).then(|| self.active_after.to_string());
        self.active_before.as_ref().map(RStr::bytes) != wanted.as_deref().map(str::as_bytes)
    }

    fn ringed_after(&self) -> usize {
        match self.damaged {
            Some(_) => self.positions.len(),
            None => usize::from(self.serviceable),
        }
    }

    fn ring_changes(&self) -> bool {
        self.positions.len() != self.ringed_after()
    }

    fn next_changes(&self) -> bool {
        self.next_before != self.next_after
    }

    fn changed(&self) -> bool {
        self.active_changes() || self.ring_changes() || self.next_changes()
    }

    fn reply(self, dry: bool) -> Reply {
        let changed = self.changed();
        let time = |t: Option<i64>| t.map_or(Reply::Null, Reply::Int);
        Reply::Map(vec![
            ("changed", Reply::Int(i64::from(changed))),
            ("ringed_before", Reply::Int(self.positions.len() as i64)),
            ("ringed_after", Reply::Int(self.ringed_after() as i64)),
            (
                "active_before",
                self.active_before.map_or(Reply::Null, Reply::Owned),
            ),
            ("active_after", Reply::Int(self.active_after)),
            ("next_before", time(self.next_before)),
            ("next_after", time(self.next_after)),
            ("dry_run", Reply::Int(i64::from(dry))),
            (
                "damaged",
                self.damaged.map_or(Reply::Null, |m| Reply::Bytes(m.into_bytes())),
            ),
        ])
    }
}

/// Repairs `lanes` (distinct); with `dry` nothing is written. One reply map
/// per lane.
pub fn repair(q: &Queue, lanes: &[Arg], dry: bool) -> Result<Vec<Reply>, Error> {
    // ---- read: everything is found and validated before the first write ----
    let mut plans: Vec<Plan> = lanes
        .iter()
        .map(|&lane| Plan {
            lane,
            active_before: None,
            active_after: 0,
            positions: Vec::new(),
            serviceable: false,
            next_before: None,
            next_after: None,
            damaged: None,
        })
        .collect();
    let index: HashMap<&[u8], usize> = lanes.iter().enumerate().map(|(i, l)| (l.bytes(), i)).collect();
    count_leases(q, &index, &mut plans)?;
    let ring = q.joinable()?;
    for i in 0..ring.len() {
        if let Some(&p) = ring.list_get(i as i64).and_then(|l| index.get(l.bytes())) {
            plans[p].positions.push(i);
        }
    }
    let active = q.active()?;
    let limits = q.limits()?;
    // Of another type, they are the queue's damage, not every lane's: as a
    // claim, refused (`P gtat` looked at only when the queue has rates).
    if q.optional(Fixed::Rate, Kind::Hash)?.is_some() {
        q.tats()?;
    }
    let next = q.next()?;
    let now = q.ctx.now_ms();
    for plan in &mut plans {
        plan.active_before = active.hash_get(plan.lane);
        let paused = q.is_paused(plan.lane)?;
        plan.next_before = next.zset_score(plan.lane).map(|t| t as i64);
        plan.next_after = plan.next_before;
        // One lane's damage must not stop the others' repair.
        let limit = stored_int(limits, plan.lane, "limit of lane");
        let until = match q.throttled_until(plan.lane) {
            Err(e @ Error::NoPermission { .. }) => return Err(e),
            until => until,
        };
        let depth = match q.pending_zset(plan.lane.bytes()) {
            Ok(zset) => Ok(zset.len()),
            Err(Error::WrongType) => Err(()),
            Err(e) => return Err(e), // NOPERM: the call's, not the lane's
        };
        match (limit, until, depth) {
            (Ok(limit), Ok(until), Ok(depth)) => {
                let throttled = until.is_some_and(|at| at > now);
                plan.serviceable =
                    depth > 0 && !paused && !throttled && limit.is_none_or(|l| plan.active_after < l);
                // A paused lane's place (a timed pause) is left as it is.
                if !paused {
                    // No wait, or one whose time has come: out, rung if
                    // serviceable (as the next claim would).
                    plan.next_after = until.filter(|_| throttled);
                }
            }
            (Err(e), _, _) | (_, Err(e), _) => plan.damaged = e.message(),
            (_, _, Err(_)) => {
                let key = layout::pending(q.prefix_bytes, plan.lane.bytes());
                plan.damaged = Some(format!("'{}' is not a sorted set", quote(&key)));
            }
        }
    }

    // ---- write ----
    if !dry {
        write(q, &plans)?;
        // A count mended may make a lane already in the ring servable.
        q.wake_waiters();
    }
    Ok(plans.into_iter().map(|p| p.reply(dry)).collect())
}

/// Every lease whose row names one of the lanes and says `active`, by one
/// walk of `P active`.
fn count_leases(q: &Queue, index: &HashMap<&[u8], usize>, plans: &mut [Plan]) -> Result<(), Error> {
    let leases = q.leases()?;
    let mut error = None;
    leases.zset_for_each(|job, _| {
        if error.is_some() {
            return;
        }
        let parts = layout::row_parts(q.prefix_bytes, job.bytes());
        let read = q
            .ctx
            .peek_field(&parts, word(Word::Group))
            .and_then(|g| Ok((g, q.ctx.peek_field(&parts, word(Word::State))?)));
        match read {
            Ok((Some(group), Some(state))) => {
                if State::parse(state.bytes()) == Some(State::Active) {
                    if let Some(&p) = index.get(group.bytes()) {
                        plans[p].active_after += 1;
                    }
                }
            }
            Ok(_) => {}
            Err(e) => error = Some(e),
        }
    });
    error.map_or(Ok(()), Err)
}

fn write(q: &Queue, plans: &[Plan]) -> Result<(), Error> {
    let active = q.active()?;
    for plan in plans.iter().filter(|p| p.active_changes()) {
        q.set_count(active, plan.lane, plan.active_after);
    }
    let next = q.next()?;
    for plan in plans.iter().filter(|p| p.next_changes()) {
        match plan.next_after {
            Some(at) => rate::wait_until(q, next, plan.lane, at),
            None => {
                q.zrem(next, &[plan.lane], c"zrem");
            }
        }
    }
    // Every occurrence of a lane whose membership is wrong goes; the
    // serviceable ones then join once, at the tail.
    let ring = q.ring()?;
    for plan in plans.iter().filter(|p| p.ring_changes()) {
        if !plan.positions.is_empty() {
            q.lrem(ring, plan.lane);
        }
    }
    for plan in plans.iter().filter(|p| p.ring_changes() && p.serviceable) {
        q.follow(plan.lane, RingChange::Join)?;
    }
    Ok(())
}
