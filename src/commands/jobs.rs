//! A job's transitions: EMQ.COMPLETE, EMQ.RETRY, EMQ.DELAY, EMQ.EXTEND
//! (EchoMQ's `@complete`, `@retry`, `@delay`, `@extend_lock`).

use crate::ffi::{Argv, Reply};
use crate::model::error::{Error, MAX_RANGE};
use crate::model::grammar::{self, LEASE_MAX};
use crate::queue::Queue;
use crate::runtime::{stats, Call};

use crate::engine::jobs::{self, Retried};
use crate::engine::timer;

use super::args::{of_kind, Args};

/// `EMQ.COMPLETE P job token`: 1, or 0 when the row is gone.
pub fn complete<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 3, 3)?;
    let prefix = args.prefix(call.ctx)?;
    let (job, token) = (args.arg()?, args.arg()?);
    let q = Queue::new(call, prefix);
    let done = jobs::complete(&q, job, token)?;
    call.count(&stats::JOBS_COMPLETED, done as u64);
    Ok(Reply::Int(done))
}

/// `EMQ.RETRY P job token delay max error`: `scheduled` or `dead`.
pub fn retry<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 6, 6)?;
    let prefix = args.prefix(call.ctx)?;
    let (job, token) = (args.arg()?, args.arg()?);
    let delay = grammar::delay(args.arg()?.bytes(), "delay")?;
    let max = args.int("max", 0, i64::MAX, MAX_RANGE)?;
    let error = args.arg()?;
    let q = Queue::new(call, prefix);
    Ok(match jobs::retry(&q, job, token, delay, max, error)? {
        Retried::Scheduled(due) => {
            call.count(&stats::JOBS_RETRIED, 1);
            timer::due(call.ctx, q.prefix_bytes, due);
            Reply::Bytes(b"scheduled".to_vec())
        }
        Retried::Dead => {
            call.count(&stats::JOBS_DIED, 1);
            Reply::Bytes(b"dead".to_vec())
        }
    })
}

/// `EMQ.DELAY P job token IN ms | AT ms`. Reply 1.
pub fn delay<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 5, 5)?;
    let prefix = args.prefix(call.ctx)?;
    let (job, token) = (args.arg()?, args.arg()?);
    let due = args.when(call.ctx)?;
    of_kind(call, [job])?;
    let q = Queue::new(call, prefix);
    jobs::delay(&q, job, token, due)?;
    call.count(&stats::JOBS_DELAYED, 1);
    timer::due(call.ctx, q.prefix_bytes, due);
    Ok(Reply::Int(1))
}

/// `EMQ.EXTEND P job token lease`: 1, 0 (not leased) or -1 (row gone).
pub fn extend<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 4, 4)?;
    let prefix = args.prefix(call.ctx)?;
    let (job, token) = (args.arg()?, args.arg()?);
    let lease = args.lease()?;
    debug_assert!(lease <= LEASE_MAX);
    let q = Queue::new(call, prefix);
    let deadline = call.ctx.now_ms().saturating_add(lease);
    let extended = jobs::extend(&q, job, token, deadline)?;
    call.count(&stats::JOBS_EXTENDED, u64::from(extended == 1));
    if extended == 1 {
        // A lease made shorter: waiting clients' timer returns it at its end.
        timer::due(call.ctx, q.prefix_bytes, deadline);
    }
    Ok(Reply::Int(extended))
}
