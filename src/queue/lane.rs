//! A lane's state as commands read it: its depth, active count, ceiling,
//! pause and whether it waits in `P gnext` (throttled, or paused until a
//! time: docs/commands.md, "EMQ.RATE"), each key type-checked and each number validated (a damaged value
//! is an error naming the key and the lane, docs/damage.md).

use crate::ffi::{Arg, Key};
use crate::model::error::{Error, INTEGER, RATE_TEXT};
use crate::model::grammar::parse_i64;
use crate::model::rate::Rate;
use crate::model::schedule::Lane;

use super::Queue;

/// A lane's numbers, each read on its own: what is damaged says so without
/// hiding the rest.
pub struct LaneRead {
    pub depth: Result<u64, Error>,
    pub active: Result<i64, Error>,
    pub limit: Result<Option<i64>, Error>,
    pub paused: Result<bool, Error>,
    pub throttled: Result<bool, Error>,
}

impl LaneRead {
    /// The lane, or its damage (`Ok(Err(..))`); a key the caller may not
    /// touch is no damage but the command's refusal (the outer `Err`).
    pub fn lane_or_damage(&self) -> Result<Result<Lane, Error>, Error> {
        match self.lane() {
            Err(e @ Error::NoPermission { .. }) => Err(e),
            read => Ok(read),
        }
    }

    /// The lane, or the first error met reading it (in the order read).
    pub fn lane(&self) -> Result<Lane, Error> {
        Ok(Lane {
            depth: self.depth.clone()?,
            active: self.active.clone()?,
            limit: self.limit.clone()?,
            paused: self.paused.clone()?,
            throttled: self.throttled.clone()?,
        })
    }
}

impl<'q> Queue<'q> {
    /// The lane's numbers: depth, active count, ceiling, paused.
    pub fn lane(&self, lane: Arg) -> Result<Lane, Error> {
        self.lane_read(lane).lane()
    }

    /// The lane's numbers, each read on its own.
    pub fn lane_read(&self, lane: Arg) -> LaneRead {
        LaneRead {
            depth: self.pending_zset(lane.bytes()).map(|z| z.len() as u64),
            active: self
                .active()
                .and_then(|h| stored_int(h, lane, "active count of lane"))
                .map(|a| a.unwrap_or(0)),
            limit: self.limits().and_then(|h| stored_int(h, lane, "limit of lane")),
            paused: self.is_paused(lane),
            throttled: self.waits_in_next(lane),
        }
    }

    /// The lane's rate and arrival time (µs), if it has a rate (an error
    /// names a damaged rate or arrival time).
    fn rate_state(&self, lane: Arg) -> Result<Option<(Rate, Option<i64>)>, Error> {
        let rates = self.rates()?;
        let Some(text) = rates.hash_get(lane) else {
            return Ok(None);
        };
        let rate = Rate::parse(text.bytes()).ok_or_else(|| {
            Error::bad_stored("rate of lane", lane.bytes(), rates.name().bytes(), RATE_TEXT)
        })?;
        let tat = stored_int(self.tats()?, lane, "arrival time of lane")?;
        Ok(Some((rate, tat)))
    }

    /// The time (ms) the lane's rate next allows a start, if it allows none
    /// now (an error names a damaged rate or arrival time).
    pub fn throttled_until(&self, lane: Arg) -> Result<Option<i64>, Error> {
        let Some((rate, tat)) = self.rate_state(lane)? else {
            return Ok(None);
        };
        let now_us = self.ctx.now_ms().saturating_mul(1000);
        Ok((rate.allowed(tat, now_us) == 0).then(|| rate.next_start_ms(tat.unwrap_or(now_us))))
    }

    /// Whether a paused lane's time `at` in `P gnext` is the wait its rate
    /// set (the next start its arrival time allows), not a timed pause's
    /// end: EchoMQ's `@gpause` leaves a throttled lane's wait in place.
    /// EMQ.PAUSE FOR never ends a pause at that time (docs/commands.md,
    /// "EMQ.PAUSE"). A damaged rate is read as a timed pause.
    pub fn is_rate_wait(&self, lane: Arg, at: i64) -> Result<bool, Error> {
        match self.rate_state(lane) {
            Ok(Some((rate, Some(tat)))) => Ok(rate.next_start_ms(tat) == at),
            Ok(_) => Ok(false),
            Err(e @ Error::NoPermission { .. }) => Err(e),
            Err(_) => Ok(false),
        }
    }

    /// The end of the lane's timed pause, if it is paused until a time.
    pub fn pause_end(&self, lane: Arg) -> Result<Option<i64>, Error> {
        if !self.is_paused(lane)? {
            return Ok(None);
        }
        let Some(at) = self.next()?.zset_score(lane).map(|t| t as i64) else {
            return Ok(None);
        };
        Ok((!self.is_rate_wait(lane, at)?).then_some(at))
    }

    /// The lane's numbers with `limit` for its ceiling (the stored one is
    /// not read: it is about to be replaced, and may be damaged).
    pub fn lane_with_limit(&self, lane: Arg, limit: Option<i64>) -> Result<Lane, Error> {
        let read = self.lane_read(lane);
        Ok(Lane {
            depth: read.depth?,
            active: read.active?,
            limit,
            paused: read.paused?,
            throttled: read.throttled?,
        })
    }
}

/// An integer field of a hash: `None` when the field is missing; an error
/// naming the key and the field when the value is not an integer.
pub fn stored_int(hash: Key, field: Arg, what: &'static str) -> Result<Option<i64>, Error> {
    match hash.hash_get(field) {
        None => Ok(None),
        Some(v) => parse_i64(v.bytes())
            .map(Some)
            .ok_or_else(|| Error::bad_stored(what, field.bytes(), hash.name().bytes(), INTEGER)),
    }
}
