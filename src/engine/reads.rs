//! EchoMQ's metric reads as commands (SPEC section 9): `@counts`,
//! `@state_lookup`, `@lane_counts`, `@is_maxed`, `@rate_ttl`. Each reads
//! only; a key of another type is `WRONGTYPE`, as the script's call answers,
//! and a stored number that is none is an error naming it (where the script
//! fails or drops the value).

use crate::ffi::{word, Arg, Kind, Reply, Word};
use crate::model::error::{Error, INTEGER};
use crate::model::grammar::parse_i64;
use crate::model::layout::{self, Fixed};
use crate::queue::Queue;

/// A queue-wide set COUNTS reads, by the name its caller gives.
pub fn set_of(name: &[u8]) -> Option<Fixed> {
    match name {
        b"pending" => Some(Fixed::Flat),
        b"active" => Some(Fixed::Leases),
        b"schedule" => Some(Fixed::Schedule),
        b"dead" => Some(Fixed::Dead),
        _ => None,
    }
}

/// A stored integer, or the error naming it.
fn stored(value: Option<Vec<u8>>, what: &'static str, field: &[u8], key: Arg) -> Result<Option<i64>, Error> {
    match value {
        None => Ok(None),
        Some(v) => parse_i64(&v)
            .map(Some)
            .ok_or_else(|| Error::bad_stored(what, field, key.bytes(), INTEGER)),
    }
}

/// EMQ.COUNTS: each set's size, then each metric's count (0 when absent).
pub fn counts(q: &Queue, sets: &[Fixed], metrics: &[Arg]) -> Result<Reply, Error> {
    let mut out = Vec::with_capacity(sets.len() + metrics.len());
    for &set in sets {
        out.push(Reply::Int(q.fixed(set, Kind::Zset)?.len() as i64));
    }
    for name in metrics {
        let key = q
            .ctx
            .key(&[q.prefix_bytes, b"metrics:", name.bytes()])?
            .expect(Kind::Hash)?;
        let count = key.hash_get(word(Word::Count)).map(|c| c.bytes().to_vec());
        out.push(Reply::Int(
            stored(count, "count", b"count", key.name())?.unwrap_or(0),
        ));
    }
    Ok(Reply::Array(out))
}

/// EMQ.STATE: where the job is — `pending`, `active`, `scheduled`, `dead` by
/// the queue-wide sets, else `awaiting_children` or `unknown` by its row,
/// else `absent` (a lane's waiting job reads `unknown`, as the script).
pub fn state(q: &Queue, job: Arg) -> Result<Reply, Error> {
    for (set, name) in [
        (Fixed::Flat, &b"pending"[..]),
        (Fixed::Leases, b"active"),
        (Fixed::Schedule, b"scheduled"),
        (Fixed::Dead, b"dead"),
    ] {
        if q.fixed(set, Kind::Zset)?.zset_score(job).is_some() {
            return Ok(Reply::Bytes(name.to_vec()));
        }
    }
    let row = q.row_key(job.bytes())?.expect(Kind::Hash)?;
    let state = match row.hash_get(word(Word::State)) {
        Some(s) if s.bytes() == b"awaiting_children" => &b"awaiting_children"[..],
        Some(_) => b"unknown",
        None if row.kind() == Kind::Hash => b"unknown",
        None => b"absent",
    };
    Ok(Reply::Bytes(state.to_vec()))
}

/// EMQ.DEPTHS: each lane's pending jobs.
pub fn depths(q: &Queue, lanes: &[Arg]) -> Result<Reply, Error> {
    let mut out = Vec::with_capacity(lanes.len());
    for lane in lanes {
        out.push(Reply::Int(q.pending_zset(lane.bytes())?.len() as i64));
    }
    Ok(Reply::Array(out))
}

/// EMQ.MAXED: 0, or `EMQRATE at concurrency ceiling` when `P meta`'s
/// `concurrency` is above 0 and as many jobs are leased.
pub fn maxed(q: &Queue) -> Result<Reply, Error> {
    let meta = q.meta()?;
    let field = q.ctx.string(b"concurrency");
    let cap = meta.hash_get(field.as_arg()).map(|c| c.bytes().to_vec());
    let cap = stored(cap, "concurrency", b"concurrency", meta.name())?.unwrap_or(0);
    if cap > 0 && q.leases()?.len() as i64 >= cap {
        return Err(Error::AtCeiling);
    }
    Ok(Reply::Int(0))
}

/// EMQ.RATETTL: the ms left of `P limiter`'s window when its count has
/// reached `max` (0: `P meta`'s `max`), else 0.
pub fn rate_ttl(q: &Queue, max: i64) -> Result<Reply, Error> {
    let max = if max == 0 {
        let meta = q.meta()?;
        let field = q.ctx.string(b"max");
        let v = meta.hash_get(field.as_arg()).map(|c| c.bytes().to_vec());
        stored(v, "max", b"max", meta.name())?.unwrap_or(0)
    } else {
        max
    };
    let limiter = q.ctx.key(&layout::limiter_parts(q.prefix_bytes))?;
    if !matches!(limiter.kind(), Kind::Empty | Kind::String) {
        return Err(Error::WrongType);
    }
    let value = limiter.string_value();
    let count = stored(
        value.clone(),
        "count",
        value.as_deref().unwrap_or_default(),
        limiter.name(),
    )?
    .unwrap_or(0);
    if max > 0 && max <= count {
        if let Some(ttl) = limiter.expire_ms().filter(|t| *t > 0) {
            return Ok(Reply::Int(ttl));
        }
    }
    Ok(Reply::Int(0))
}
