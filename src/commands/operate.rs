//! Seeing a queue: EMQ.QUEUE (the queue at a glance) and EMQ.LANES (every
//! lane, as SCAN iterates keys). Mending it is `repair.rs`.

use std::collections::BTreeSet;

use crate::args::Args;
use crate::errors::Error;
use crate::ffi::{Argv, RStr, Reply};
use crate::keys::Fixed;
use crate::queue::Queue;
use crate::record;

use super::release;
use super::Call;

/// `EMQ.QUEUE P`: lanes in the ring, paused lanes, leased jobs, expired
/// leases not yet returned, the earliest lease deadline (nil when none), dead
/// jobs, `max-deliveries` (nil when none). Each figure O(1) or O(log N).
pub fn queue<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 1, 1)?;
    let prefix = args.prefix(call.ctx.is_cluster())?;
    let q = Queue::new(call, prefix);
    let ctx = call.ctx;
    let ring = q.ring()?.len() as i64;
    let paused_key = q.paused_key()?;
    let paused = if ctx.key_exists(paused_key.as_arg()) {
        ctx.int_call(c"SCARD", &[paused_key.as_arg()])?
    } else {
        0
    };
    let leases = q.leases()?;
    let now = ctx.now_ms().to_string();
    let expired = match leases.len() {
        0 => 0,
        _ => ctx.zcount(leases.name(), b"-inf", now.as_bytes())?,
    };
    let next = leases.zset_first_score();
    let dead = q.dead()?.len() as i64;
    // A damaged setting is shown as stored: this is where an operator looks.
    let max = match release::max_deliveries(&q) {
        Ok(max) => max.map_or(Reply::Null, Reply::Int),
        Err(Error::BadStored { .. }) => {
            let field = ctx.string(b"max-deliveries");
            q.policy()?
                .hash_get(field.as_arg())
                .map_or(Reply::Null, Reply::Owned)
        }
        Err(e) => return Err(e),
    };
    Ok(Reply::Map(vec![
        ("ringed", Reply::Int(ring)),
        ("paused", Reply::Int(paused)),
        ("leased", Reply::Int(leases.len() as i64)),
        ("expired", Reply::Int(expired)),
        (
            "next_deadline",
            next.map_or(Reply::Null, |d| Reply::Int(d as i64)),
        ),
        ("dead", Reply::Int(dead)),
        ("max_deliveries", max),
    ]))
}

/// Where lanes are named, in the order EMQ.LANES walks them. A lane with
/// pending jobs, leases, a weight, a ceiling or a pause is named in one of
/// them; so is a lane only a lease record or the ring names (damage
/// EMQ.REPAIR then mends).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// `P g:<lane>:pending` keys (SCAN of the keyspace).
    Pending,
    /// Fields of `P gweight`, `P glimit`, `P gactive` (HSCAN).
    Hash(Fixed),
    /// Members of `P gpaused` (SSCAN).
    Paused,
    /// The lanes of `P jlease`'s records (HSCAN).
    Records,
    /// `P gring`, by position.
    Ring,
}

const SOURCES: [Source; 7] = [
    Source::Pending,
    Source::Hash(Fixed::Weight),
    Source::Hash(Fixed::Limit),
    Source::Hash(Fixed::Active),
    Source::Paused,
    Source::Records,
    Source::Ring,
];

/// A cursor holds the source (3 bits) and the position within it.
const SOURCE_BITS: u32 = 3;

/// `EMQ.LANES P cursor [COUNT n]`: `[next_cursor, [lane, …]]`, as `SCAN`:
/// cursor 0 starts, a returned 0 ends; every lane that has pending jobs,
/// leases, a weight, a ceiling or a pause for the whole iteration is returned
/// at least once; each call does about `COUNT` (default 10) work.
pub fn lanes<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 2, usize::MAX)?;
    let prefix = args.prefix(call.ctx.is_cluster())?;
    let cursor = args.arg()?;
    let count = args.count(10)? as u64;
    let cursor: u64 = std::str::from_utf8(cursor.bytes())
        .ok()
        .filter(|s| !s.starts_with('+'))
        .and_then(|s| s.parse().ok())
        .ok_or(Error::bad_arg("cursor", "an unsigned integer"))?;
    let (mut source, mut at) = ((cursor & 0b111) as usize, cursor >> SOURCE_BITS);
    if source >= SOURCES.len() {
        return Err(Error::bad_arg("cursor", "a cursor EMQ.LANES returned"));
    }
    let q = Queue::new(call, prefix);
    let mut found: Vec<Vec<u8>> = Vec::new();
    let mut seen = BTreeSet::new();
    // Steps until about COUNT work is done or every source is walked. A step
    // that stops short of its source's end spent its whole budget (a SCAN
    // with MATCH may visit many keys and name none); one that reached the
    // end spent about what it returned, and a missing key's step is nearly
    // free.
    let mut work = 0;
    while source < SOURCES.len() && work < count {
        let budget = count - work;
        let (next, lanes) = step(&q, SOURCES[source], at, budget)?;
        work += if next == 0 {
            lanes.len().max(1) as u64
        } else {
            budget
        };
        for lane in lanes {
            if !lane.is_empty() && seen.insert(lane.clone()) {
                found.push(lane);
            }
        }
        if next == 0 {
            source += 1;
            at = 0;
        } else {
            at = next;
        }
    }
    let next = if source >= SOURCES.len() {
        0
    } else if at > u64::MAX >> SOURCE_BITS {
        // The server's cursors stay far below 2^61; one that does not is a
        // server this module does not know.
        return Err(Error::Internal);
    } else {
        at << SOURCE_BITS | source as u64
    };
    Ok(Reply::Array(vec![
        Reply::Bytes(next.to_string().into_bytes()),
        Reply::Array(found.into_iter().map(Reply::Bytes).collect()),
    ]))
}

/// One step of one source: the next position (0: done) and the lanes named.
fn step(q: &Queue, source: Source, at: u64, count: u64) -> Result<(u64, Vec<Vec<u8>>), Error> {
    let ctx = q.ctx;
    let p = q.prefix.bytes();
    match source {
        Source::Pending => {
            let pattern = [glob_escape(p), b"g:*:pending".to_vec()].concat();
            let (next, names) = ctx.scan_step(c"SCAN", None, at, Some(&pattern), count)?;
            // The names are under the prefix; each still passes the caller's
            // permissions, as a key the call opened would.
            for name in &names {
                ctx.check_key(name.as_arg())?;
            }
            let head = p.len() + 2;
            let lanes = names
                .iter()
                .map(RStr::bytes)
                .filter(|n| n.len() >= head + b":pending".len())
                .map(|n| n[head..n.len() - b":pending".len()].to_vec())
                .collect();
            Ok((next, lanes))
        }
        Source::Hash(hash) => {
            let name = q.name(hash);
            ctx.check_key(name.as_arg())?;
            let (next, items) = ctx.scan_step(c"HSCAN", Some(name.as_arg()), at, None, count)?;
            Ok((
                next,
                items.iter().step_by(2).map(|f| f.bytes().to_vec()).collect(),
            ))
        }
        Source::Paused => {
            let name = q.paused_key()?;
            let (next, items) = ctx.scan_step(c"SSCAN", Some(name.as_arg()), at, None, count)?;
            Ok((next, items.iter().map(|m| m.bytes().to_vec()).collect()))
        }
        Source::Records => {
            let name = q.name(Fixed::Jlease);
            ctx.check_key(name.as_arg())?;
            let (next, items) = ctx.scan_step(c"HSCAN", Some(name.as_arg()), at, None, count)?;
            let lanes = items
                .iter()
                .skip(1)
                .step_by(2)
                .filter_map(|rec| record::parse(rec.bytes()).map(|r| r.lane.to_vec()))
                .collect();
            Ok((next, lanes))
        }
        Source::Ring => {
            let ring = q.ring()?;
            let len = ring.len() as u64;
            let end = at.saturating_add(count).min(len);
            let lanes = (at..end)
                .filter_map(|i| ring.list_get(i as i64))
                .map(|l| l.bytes().to_vec())
                .collect();
            Ok((if end >= len { 0 } else { end }, lanes))
        }
    }
}

/// `pattern` matching `s` literally (`*?[]\` escaped).
fn glob_escape(s: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() + 4);
    for &b in s {
        if matches!(b, b'*' | b'?' | b'[' | b']' | b'\\') {
            out.push(b'\\');
        }
        out.push(b);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::glob_escape;

    #[test]
    fn a_prefix_is_matched_literally() {
        assert_eq!(glob_escape(b"emq:{o}:"), b"emq:{o}:");
        assert_eq!(glob_escape(b"a*b?[c]\\"), b"a\\*b\\?\\[c\\]\\\\");
    }
}
