//! EMQ.LANES: every lane of a queue, as SCAN iterates keys. A lane with
//! pending jobs, leases, a weight, a ceiling or a pause is named by one of
//! the sources below, walked in turn; so is a lane only the ring names
//! (damage EMQ.REPAIR then mends).

use std::collections::BTreeSet;

use crate::ffi::{word, RStr, Word};
use crate::model::error::Error;
use crate::model::layout::{self, Fixed};
use crate::queue::Queue;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    /// `P g:<lane>:pending` keys (SCAN of the keyspace).
    Pending,
    /// Fields of `P gweight`, `P glimit`, `P gactive` (HSCAN).
    Hash(Fixed),
    /// Members of `P paused` (SSCAN).
    Paused,
    /// The lanes the rows of `P active`'s jobs name (ZSCAN).
    Leases,
    /// `P ring`, by position.
    Ring,
}

const SOURCES: [Source; 7] = [
    Source::Pending,
    Source::Hash(Fixed::Weight),
    Source::Hash(Fixed::Limit),
    Source::Hash(Fixed::Active),
    Source::Paused,
    Source::Leases,
    Source::Ring,
];

/// A cursor holds the source (4 bits) and the position within it.
const SOURCE_BITS: u32 = 4;

/// One call: `(next_cursor, lanes)`, about `count` work; cursor 0 starts, a
/// returned 0 ends.
pub fn lanes(q: &Queue, cursor: u64, count: u64) -> Result<(u64, Vec<Vec<u8>>), Error> {
    let (mut source, mut at) = ((cursor & 0xf) as usize, cursor >> SOURCE_BITS);
    if source >= SOURCES.len() {
        return Err(Error::bad_arg("cursor", "a cursor EMQ.LANES returned"));
    }
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
        let (next, lanes) = step(q, SOURCES[source], at, budget)?;
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
        // The server's cursors stay far below 2^60; one that does not is a
        // server this module does not know.
        return Err(Error::Internal);
    } else {
        at << SOURCE_BITS | source as u64
    };
    Ok((next, found))
}

/// One step of one source: the next position (0: done) and the lanes named.
fn step(q: &Queue, source: Source, at: u64, count: u64) -> Result<(u64, Vec<Vec<u8>>), Error> {
    let ctx = q.ctx;
    let p = q.prefix_bytes;
    match source {
        Source::Pending => {
            let pattern = [glob_escape(p), b"g:*:pending".to_vec()].concat();
            let (next, names) = ctx.scan_step(c"SCAN", None, at, Some(&pattern), count)?;
            // The names are under the prefix; each still passes the caller's
            // permissions, as a key the call opened would.
            for name in &names {
                ctx.check_key(name.as_arg())?;
            }
            let lanes = names
                .iter()
                .filter_map(|n| layout::lane_of_pending(p, n.bytes()).map(<[u8]>::to_vec))
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
        Source::Leases => {
            let name = q.name(Fixed::Leases);
            ctx.check_key(name.as_arg())?;
            let (next, items) = ctx.scan_step(c"ZSCAN", Some(name.as_arg()), at, None, count)?;
            let mut lanes = Vec::new();
            for job in items.iter().step_by(2) {
                let group = ctx.peek_field(&layout::row_parts(p, job.bytes()), word(Word::Group))?;
                lanes.extend(group.as_ref().map(|g| RStr::bytes(g).to_vec()));
            }
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
