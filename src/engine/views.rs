//! Seeing a queue: EMQ.LANE (one lane) and EMQ.QUEUE (the queue at a
//! glance, each figure O(1) or O(log N)). Both read only.

use crate::ffi::{word, Arg, Kind, Reply, Word};
use crate::model::error::Error;
use crate::model::layout::Fixed;
use crate::model::schedule::effective_weight;
use crate::queue::{stored_int, Queue};

use super::returns::{max_stalled, OnDamage};

/// EMQ.LANE: depth, active, weight, limit (nil when none), paused, how many
/// times the ring holds it (1 when serviceable; more is damage), its rate,
/// whether the rate allows no start now and until when, and the end of a
/// timed pause.
pub fn lane(q: &Queue, lane: Arg) -> Result<Reply, Error> {
    let state = q.lane(lane)?;
    let weight = effective_weight(stored_int(q.weights()?, lane, "weight of lane")?);
    let ringed = q.ring()?.list_positions(lane.bytes()).len() as i64;
    let text = q.rates()?.hash_get(lane);
    let until = q.throttled_until(lane)?;
    let paused_until = q.pause_end(lane)?;
    let (credit, cost) = credit_and_cost(q, lane)?;
    let int = Reply::Int;
    let time = |t: Option<i64>| t.map_or(Reply::Null, int);
    Ok(Reply::Map(vec![
        ("depth", int(state.depth as i64)),
        ("active", int(state.active)),
        ("weight", int(weight)),
        ("limit", state.limit.map_or(Reply::Null, int)),
        ("paused", int(i64::from(state.paused))),
        ("ringed", int(ringed)),
        ("rate", text.map_or(Reply::Null, Reply::Owned)),
        ("throttled", int(i64::from(until.is_some()))),
        ("throttled_until", time(until)),
        ("paused_until", time(paused_until)),
        ("credit", credit),
        ("cost", cost),
    ]))
}

/// The lane's credit and cost under fairness by time (µs; nil when none,
/// the stored text when damaged: this is where an operator looks).
pub fn credit_and_cost(q: &Queue, lane: Arg) -> Result<(Reply, Reply), Error> {
    let value = |key: Option<crate::ffi::Key>| match key.and_then(|h| h.hash_get(lane)) {
        None => Reply::Null,
        Some(v) => match crate::model::grammar::parse_i64(v.bytes()) {
            Some(n) => Reply::Int(n),
            None => Reply::Owned(v),
        },
    };
    Ok((
        value(q.optional(Fixed::Credit, Kind::Hash)?),
        value(q.optional(Fixed::Cost, Kind::Hash)?),
    ))
}

/// How many lanes wait in `P gnext` throttled (for a time still to come: a
/// time passed is no wait, as EMQ.LANE says), and how many paused until a
/// time (not a paused lane's rate wait: EMQ.LANE's `paused_until`), O(G) for
/// G lanes in it, and the first time one comes back.
fn waiting(q: &Queue, now: i64) -> Result<(i64, i64, Option<f64>), Error> {
    let next = q.next()?;
    let mut lanes = Vec::with_capacity(next.len());
    next.zset_for_each(|lane, at| lanes.push((lane, at)));
    let (mut throttled, mut paused) = (0, 0);
    let mut first: Option<f64> = None;
    for (lane, at) in &lanes {
        let lane = lane.as_arg();
        let is_paused = q.is_paused(lane)?;
        // A paused lane's rate wait ends no pause: nothing comes back then.
        let returns = !is_paused || !q.is_rate_wait(lane, *at as i64)?;
        match is_paused {
            true => paused += i64::from(returns),
            false => throttled += i64::from(*at > now as f64),
        }
        if returns {
            first = Some(first.map_or(*at, |f| f.min(*at)));
        }
    }
    Ok((throttled, paused, first))
}

/// EMQ.QUEUE: the ring's lanes, paused lanes, whether the whole queue is
/// paused, the flat queue's depth, leased and expired jobs with the next
/// deadline, scheduled and due jobs with the next due time, lanes waiting in
/// `P gnext` (throttled, timed-paused) with the first return, dead jobs, the
/// stall policy (as stored when damaged: this is where an operator looks),
/// completed and failed counts.
pub fn queue(q: &Queue) -> Result<Reply, Error> {
    let ctx = q.ctx;
    let now = ctx.now_ms();
    let now_text = now.to_string();
    let ringed = q.ring()?.len() as i64;
    let paused_key = q.paused_key()?;
    let paused = match ctx.key_exists(paused_key.as_arg()) {
        true => ctx.int_call(c"SCARD", &[paused_key.as_arg()])?,
        false => 0,
    };
    let meta = q.optional(Fixed::Meta, Kind::Hash)?;
    let queue_paused = meta.is_some_and(|m| m.hash_has(word(Word::Paused)));
    let flat = q.flat()?.len() as i64;
    let count_until = |key: crate::ffi::Key| -> Result<i64, Error> {
        match key.len() {
            0 => Ok(0),
            _ => ctx.zcount(key.name(), b"-inf", now_text.as_bytes()),
        }
    };
    let leases = q.leases()?;
    let schedule = q.schedule()?;
    let time = |t: Option<f64>| t.map_or(Reply::Null, |t| Reply::Int(t as i64));
    let (throttled, timed_paused, next_return) = waiting(q, now)?;
    let max = match max_stalled(q, OnDamage::Fail) {
        Ok(max) => max.map_or(Reply::Null, Reply::Int),
        Err(Error::BadStored { .. }) => meta
            .and_then(|m| m.hash_get(word(Word::MaxStalled)))
            .map_or(Reply::Null, Reply::Owned),
        Err(e) => return Err(e),
    };
    let count = |key: Fixed| -> Result<Reply, Error> {
        let v = q.fixed(key, Kind::Hash)?.hash_get(word(Word::Count));
        Ok(
            match v
                .as_ref()
                .and_then(|v| crate::model::grammar::parse_i64(v.bytes()))
            {
                Some(n) => Reply::Int(n),
                None => v.map_or(Reply::Int(0), Reply::Owned),
            },
        )
    };
    Ok(Reply::Map(vec![
        ("ringed", Reply::Int(ringed)),
        ("paused", Reply::Int(paused)),
        ("queue_paused", Reply::Int(i64::from(queue_paused))),
        ("pending", Reply::Int(flat)),
        ("leased", Reply::Int(leases.len() as i64)),
        ("expired", Reply::Int(count_until(leases)?)),
        ("next_deadline", time(leases.zset_first_score())),
        ("scheduled", Reply::Int(schedule.len() as i64)),
        ("due", Reply::Int(count_until(schedule)?)),
        ("next_due", time(schedule.zset_first_score())),
        ("throttled", Reply::Int(throttled)),
        ("timed_paused", Reply::Int(timed_paused)),
        ("next_return", time(next_return)),
        ("dead", Reply::Int(q.dead()?.len() as i64)),
        ("max_stalled", max),
        ("completed", count(Fixed::Completed)?),
        ("failed", count(Fixed::Failed)?),
    ]))
}
