//! Lane administration: EMQ.ENQUEUE, EMQ.WEIGHT, EMQ.PAUSE, EMQ.RESUME,
//! EMQ.LIMIT, EMQ.REASSIGN, EMQ.DRAIN (EchoMQ's `@genqueue` … `@gdrain`),
//! and EMQ.RATE (no script's: docs/commands.md, "EMQ.RATE").

use crate::ffi::{Arg, Argv, Reply};
use crate::model::error::{Error, LEASE_RANGE, LIMIT_RANGE, PERIOD_RANGE, RATE_N_RANGE, WEIGHT_RANGE};
use crate::model::grammar::{self, LEASE_MAX};
use crate::model::rate::{self, Rate};
use crate::queue::Queue;
use crate::runtime::Call;

use crate::engine::{lanes, rate as rates};

use super::args::{of_kind, Args};

/// `EMQ.ENQUEUE P lane job payload [job payload …]`: the number enqueued.
pub fn enqueue<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    if argv.len() < 5 || argv.len().is_multiple_of(2) {
        return Err(Error::WrongArity);
    }
    let mut args = Args::new(argv, 4, usize::MAX)?;
    let prefix = args.prefix(call.ctx)?;
    let lane = args.lane()?;
    let rest = args.rest();
    let jobs: Vec<(Arg, Arg)> = rest.chunks(2).map(|p| (p[0], p[1])).collect();
    of_kind(call, jobs.iter().map(|j| j.0))?;
    let q = Queue::new(call, prefix);
    Ok(Reply::Int(lanes::enqueue(&q, lane, &jobs)?))
}

/// `EMQ.WEIGHT P lane weight` (an integer >= 1). Reply 1.
pub fn weight<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 3, 3)?;
    let prefix = args.prefix(call.ctx)?;
    let lane = args.lane()?;
    let weight = args.arg()?;
    grammar::int_in(weight.bytes(), "weight", 1, i64::MAX, WEIGHT_RANGE)?;
    let q = Queue::new(call, prefix);
    lanes::weight(&q, lane, weight)?;
    Ok(Reply::Int(1))
}

/// `EMQ.PAUSE P lane [FOR ms]`. Reply 1.
pub fn pause<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 2, 4)?;
    let prefix = args.prefix(call.ctx)?;
    let lane = args.lane()?;
    let for_ms = match args.left() {
        0 => None,
        2 if args.keyword("FOR") => Some(args.int("ms", 1, LEASE_MAX, LEASE_RANGE)?),
        _ => return Err(Error::Syntax),
    };
    let q = Queue::new(call, prefix);
    rates::pause(&q, lane, for_ms)?;
    Ok(Reply::Int(1))
}

/// `EMQ.RESUME P lane`. Reply 1.
pub fn resume<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let (q_prefix, lane) = prefix_and_lane(call, argv)?;
    let q = Queue::new(call, q_prefix);
    rates::resume(&q, lane)?;
    Ok(Reply::Int(1))
}

/// `EMQ.RATE P lane n period_ms [BURST b] | NONE`. Reply OK.
pub fn rate<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 3, 6)?;
    let prefix = args.prefix(call.ctx)?;
    let lane = args.lane()?;
    let rate = if args.left() == 1 && args.keyword("NONE") {
        None
    } else {
        let n = args.int("n", 1, rate::N_MAX, RATE_N_RANGE)?;
        let period = args.int("period", 1, rate::PERIOD_MAX_MS, PERIOD_RANGE)?;
        let burst = match args.left() {
            0 => n,
            2 if args.keyword("BURST") => args.int("burst", 1, rate::N_MAX, RATE_N_RANGE)?,
            _ => return Err(Error::Syntax),
        };
        Some(Rate::new(n, period, burst).ok_or(Error::Syntax)?)
    };
    let q = Queue::new(call, prefix);
    rates::set_rate(&q, lane, rate)?;
    Ok(Reply::Ok)
}

/// `EMQ.DRAIN P lane`: the number drained.
pub fn drain<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let (q_prefix, lane) = prefix_and_lane(call, argv)?;
    let q = Queue::new(call, q_prefix);
    Ok(Reply::Int(lanes::drain(&q, lane)?))
}

fn prefix_and_lane<'a>(call: &Call, argv: Argv<'a>) -> Result<(Arg<'a>, Arg<'a>), Error> {
    let mut args = Args::new(argv, 2, 2)?;
    let prefix = args.prefix(call.ctx)?;
    Ok((prefix, args.lane()?))
}

/// `EMQ.LIMIT P lane n | NONE`. Reply 1.
pub fn limit<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 3, 3)?;
    let prefix = args.prefix(call.ctx)?;
    let lane = args.lane()?;
    let arg = args.arg()?;
    let limit = if grammar::is_keyword(arg.bytes(), "NONE") {
        None
    } else {
        Some(grammar::int_in(arg.bytes(), "limit", 1, i64::MAX, LIMIT_RANGE)?)
    };
    let q = Queue::new(call, prefix);
    lanes::limit(&q, lane, arg, limit)?;
    Ok(Reply::Int(1))
}

/// `EMQ.REASSIGN P job lane`: -1, 0, -2 or 1, as `@greassign`.
pub fn reassign<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 3, 3)?;
    let prefix = args.prefix(call.ctx)?;
    let job = args.arg()?;
    let to = args.lane()?;
    let q = Queue::new(call, prefix);
    Ok(Reply::Int(lanes::reassign(&q, job, to)?))
}
