//! EchoMQ's metric reads: EMQ.COUNTS, EMQ.STATE, EMQ.DEPTHS, EMQ.MAXED,
//! EMQ.RATETTL (`@counts`, `@state_lookup`, `@lane_counts`, `@is_maxed`,
//! `@rate_ttl`; SPEC section 9).

use crate::ffi::{Arg, Argv, Reply};
use crate::model::error::{Error, INTEGER};
use crate::model::grammar;
use crate::queue::Queue;
use crate::runtime::Call;

use crate::engine::reads;

use super::args::Args;

/// `EMQ.COUNTS P [state …] [METRICS name …]`: the counts, in order.
pub fn counts<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 1, usize::MAX)?;
    let prefix = args.prefix(call.ctx)?;
    let rest = args.rest();
    let split = rest
        .iter()
        .position(|a| grammar::is_keyword(a.bytes(), "METRICS"))
        .unwrap_or(rest.len());
    let sets = rest[..split]
        .iter()
        .map(|a| {
            reads::set_of(a.bytes()).ok_or(Error::BadArg {
                name: "state",
                expected: "pending, active, schedule or dead",
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    let metrics: Vec<Arg> = rest.get(split + 1..).unwrap_or_default().to_vec();
    reads::counts(&Queue::new(call, prefix), &sets, &metrics)
}

/// `EMQ.STATE P job`: the job's state's name.
pub fn state<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 2, 2)?;
    let prefix = args.prefix(call.ctx)?;
    let job = args.arg()?;
    reads::state(&Queue::new(call, prefix), job)
}

/// `EMQ.DEPTHS P lane [lane …]`: each lane's depth.
pub fn depths<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 2, usize::MAX)?;
    let prefix = args.prefix(call.ctx)?;
    let mut lanes = Vec::new();
    while args.left() > 0 {
        lanes.push(args.lane()?);
    }
    reads::depths(&Queue::new(call, prefix), &lanes)
}

/// `EMQ.MAXED P`: 0, or `EMQRATE at concurrency ceiling`.
pub fn maxed<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 1, 1)?;
    let prefix = args.prefix(call.ctx)?;
    reads::maxed(&Queue::new(call, prefix))
}

/// `EMQ.RATETTL P max`: the rate limit's ms left, or 0.
pub fn ratettl<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 2, 2)?;
    let prefix = args.prefix(call.ctx)?;
    let max = args.int("max", i64::MIN, i64::MAX, INTEGER)?;
    reads::rate_ttl(&Queue::new(call, prefix), max)
}
