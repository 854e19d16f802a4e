//! EMQ.REAP (EchoMQ's `@reap`, `@greap_group`, `@sweep_stalled`) and
//! EMQ.PROMOTE (`@promote`): the jobs whose time has come, back to waiting.

use crate::ffi::{Argv, Reply};
use crate::model::error::{Error, COUNT_RANGE};
use crate::model::row::Stalls;
use crate::queue::Queue;
use crate::runtime::{stats, Call};

use crate::engine::promote::promote_due;
use crate::engine::returns::{max_stalled, return_expired, OnDamage, Sweep, PASSES};

use super::args::{self, Args};

/// The scripts' default: at most 100 a call.
const DEFAULT_COUNT: usize = 100;

/// `EMQ.REAP P [GROUP lane | MAXSTALLED m] [COUNT n]`.
pub fn reap<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut a = Args::new(argv, 1, 5)?;
    let prefix = a.prefix(call.ctx)?;
    let (mut group, mut max_arg, mut count) = (None, None, DEFAULT_COUNT);
    while a.left() > 0 {
        if a.left() < 2 {
            return Err(Error::Syntax);
        }
        if group.is_none() && max_arg.is_none() && a.keyword("GROUP") {
            group = Some(a.lane()?);
        } else if group.is_none() && max_arg.is_none() && a.keyword("MAXSTALLED") {
            max_arg = Some(a.int("MAXSTALLED", 1, i64::MAX, COUNT_RANGE)?);
        } else if a.keyword("COUNT") {
            count = args::count(a.arg()?)?;
            if a.left() > 0 {
                return Err(Error::Syntax);
            }
        } else {
            return Err(Error::Syntax);
        }
    }
    let q = Queue::new(call, prefix);
    // A stored policy makes every return count and kill as the sweep does.
    let policy = max_stalled(&q, OnDamage::Fail)?;
    let stalls = match max_arg {
        Some(m) => Stalls {
            count: true,
            max: Some(m),
        },
        None => Stalls {
            count: policy.is_some(),
            max: policy,
        },
    };
    // `GROUP`: of the first `count` expired leases, the lane's (the
    // script's window); else the first `count` that can end, past at most
    // PASSES whose lane is damaged (docs/damage.md, "Sweeps").
    let sweep = Sweep {
        look: if group.is_some() { count } else { usize::MAX },
        max: count,
        passes: PASSES,
        group: group.map(|g| g.bytes()),
        stalls,
    };
    let returned = return_expired(&q, sweep)?;
    call.count(&stats::JOBS_REAPED, returned.ended() as u64);
    if max_arg.is_some() {
        let ids = |v: Vec<crate::ffi::RStr>| Reply::Array(v.into_iter().map(Reply::Owned).collect());
        return Ok(Reply::Array(vec![ids(returned.back), ids(returned.dead)]));
    }
    let n = match group {
        Some(_) => returned.back.len() + returned.dead.len(),
        None => returned.ended(),
    };
    Ok(Reply::Int(n as i64))
}

/// `EMQ.PROMOTE P [COUNT n]`: the number promoted.
pub fn promote<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut a = Args::new(argv, 1, 3)?;
    let prefix = a.prefix(call.ctx)?;
    let count = a.count(DEFAULT_COUNT)?;
    let q = Queue::new(call, prefix);
    let promoted = promote_due(&q, count, PASSES)?;
    call.count(&stats::JOBS_PROMOTED, promoted.promoted as u64);
    Ok(Reply::Int(promoted.ended() as i64))
}
