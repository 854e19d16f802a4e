//! Seeing and mending a queue: EMQ.LANE, EMQ.QUEUE, EMQ.LANES, EMQ.REPAIR.

use crate::ffi::{Arg, Argv, Reply};
use crate::model::error::{Error, NUMLANES};
use crate::model::grammar::{self, is_keyword};
use crate::queue::Queue;
use crate::runtime::Call;

use crate::engine::{repair, scan, views};

use super::args::Args;

/// `EMQ.LANE P lane`: a map in RESP3, a flat array in RESP2.
pub fn lane<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 2, 2)?;
    let prefix = args.prefix(call.ctx)?;
    let lane = args.lane()?;
    let q = Queue::new(call, prefix);
    views::lane(&q, lane)
}

/// `EMQ.QUEUE P`: the queue at a glance.
pub fn queue<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 1, 1)?;
    let q = Queue::new(call, args.prefix(call.ctx)?);
    views::queue(&q)
}

/// `EMQ.LANES P cursor [COUNT n]`: `[next_cursor, [lane, …]]`, as `SCAN`.
pub fn lanes<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 2, 4)?;
    let prefix = args.prefix(call.ctx)?;
    let cursor = args.arg()?;
    let count = args.count(10)? as u64;
    let cursor: u64 = std::str::from_utf8(cursor.bytes())
        .ok()
        .filter(|s| !s.starts_with('+'))
        .and_then(|s| s.parse().ok())
        .ok_or(Error::bad_arg("cursor", "an unsigned integer"))?;
    let q = Queue::new(call, prefix);
    let (next, found) = scan::lanes(&q, cursor, count)?;
    Ok(Reply::Array(vec![
        Reply::Bytes(next.to_string().into_bytes()),
        Reply::Array(found.into_iter().map(Reply::Bytes).collect()),
    ]))
}

/// The lanes a REPAIR names, and whether it is a dry run and a batch.
fn parse_repair<'a>(rest: &[Arg<'a>]) -> Result<(Vec<Arg<'a>>, bool, bool), Error> {
    let dry = |tail: &[Arg]| match tail {
        [] => Ok(false),
        [k] if is_keyword(k.bytes(), "DRYRUN") => Ok(true),
        _ => Err(Error::Syntax),
    };
    // `lane [DRYRUN]` has at most two arguments; the batch form at least three.
    match rest {
        [lane, tail @ ..] if rest.len() <= 2 => {
            grammar::lane(lane.bytes())?;
            Ok((vec![*lane], dry(tail)?, false))
        }
        [word, n, tail @ ..] if is_keyword(word.bytes(), "LANES") => {
            let n = grammar::int_in(n.bytes(), "numlanes", 1, tail.len() as i64, NUMLANES)? as usize;
            let (lanes, tail) = tail.split_at(n);
            for lane in lanes {
                grammar::lane(lane.bytes())?;
            }
            // A lane given twice is repaired once.
            let lanes = grammar::distinct(lanes.to_vec(), |a| a.bytes());
            Ok((lanes, dry(tail)?, true))
        }
        _ => Err(Error::Syntax),
    }
}

/// `EMQ.REPAIR P lane [DRYRUN]` (a map of what changed) or
/// `EMQ.REPAIR P LANES n lane … [DRYRUN]` (an array of those maps).
pub fn repair<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut a = Args::new(argv, 2, usize::MAX)?;
    let prefix = a.prefix(call.ctx)?;
    let (lanes, dry, batch) = parse_repair(&a.rest())?;
    let q = Queue::new(call, prefix);
    let mut replies = repair::repair(&q, &lanes, dry)?;
    Ok(if batch {
        Reply::Array(replies)
    } else {
        replies.remove(0)
    })
}
