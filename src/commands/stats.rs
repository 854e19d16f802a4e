//! EMQ.STATS: the per-lane figures (SPEC section 8; docs/commands.md,
//! "EMQ.STATS") — one lane's, the queue's with its top lanes, or RESET.

use crate::ffi::{Argv, Reply};
use crate::model::error::{Error, NUMLANES};
use crate::model::grammar::{self, is_keyword};
use crate::queue::Queue;
use crate::runtime::Call;

use crate::engine::figures::{self, By};

use super::args::{self, Args};

/// The lanes the queue form shows unless COUNT says.
const DEFAULT_COUNT: usize = 10;

/// `EMQ.STATS P lane` | `EMQ.STATS P LANE lane` | `EMQ.STATS P LANES n
/// lane …` | `EMQ.STATS P RESET` | `EMQ.STATS P [COUNT n] [BY oldest | wait
/// | jobs | busy]`.
pub fn stats<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut a = Args::new(argv, 1, usize::MAX)?;
    let prefix = a.prefix(call.ctx)?;
    if a.left() == 1 {
        let q = Queue::new(call, prefix);
        if a.keyword("RESET") {
            figures::reset(&q);
            return Ok(Reply::Ok);
        }
        return figures::lane_stats(&q, a.lane()?.bytes());
    }
    if a.keyword("LANES") {
        let n = a.int("numlanes", 1, i64::MAX, NUMLANES)?;
        let lanes = a.rest();
        if lanes.len() as i64 != n {
            return Err(Error::bad_arg("numlanes", NUMLANES));
        }
        for lane in &lanes {
            grammar::lane(lane.bytes())?;
        }
        let names: Vec<&[u8]> = lanes.iter().map(|l| l.bytes()).collect();
        return figures::lanes_stats(&Queue::new(call, prefix), &names);
    }
    if a.keyword("LANE") {
        let lane = a.lane()?;
        if a.left() > 0 {
            return Err(Error::Syntax);
        }
        return figures::lane_stats(&Queue::new(call, prefix), lane.bytes());
    }
    let (mut count, mut by) = (None, None);
    if a.left() > 4 {
        return Err(Error::Syntax);
    }
    while a.left() > 0 {
        if a.left() < 2 {
            return Err(Error::Syntax);
        }
        if count.is_none() && a.keyword("COUNT") {
            count = Some(args::count(a.arg()?)?);
        } else if by.is_none() && a.keyword("BY") {
            by = Some(order(a.arg()?.bytes())?);
        } else {
            return Err(Error::Syntax);
        }
    }
    let q = Queue::new(call, prefix);
    figures::queue_stats(&q, count.unwrap_or(DEFAULT_COUNT), by.unwrap_or(By::Oldest))
}

fn order(word: &[u8]) -> Result<By, Error> {
    [
        ("oldest", By::Oldest),
        ("wait", By::Wait),
        ("jobs", By::Jobs),
        ("busy", By::Busy),
    ]
    .into_iter()
    .find(|(name, _)| is_keyword(word, name))
    .map(|(_, by)| by)
    .ok_or(Error::bad_arg("BY", "oldest, wait, jobs or busy"))
}
