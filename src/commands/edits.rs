//! A job's edits and the flat queue's drain: EMQ.SETDATA, EMQ.PROGRESS,
//! EMQ.LOG, EMQ.REMOVE, EMQ.REPROCESS, EMQ.QDRAIN (EchoMQ's `@update_data`,
//! `@update_progress`, `@add_log`, `@remove_job`, `@reprocess`, `@drain`;
//! SPEC section 9).

use crate::ffi::{Argv, Reply};
use crate::model::error::{Error, COUNT_RANGE};
use crate::queue::Queue;
use crate::runtime::Call;

use crate::engine::{dead, edits, jobs};

use super::args::Args;

/// `EMQ.SETDATA P job payload`: 1, or -1 when the row is gone.
pub fn setdata<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 3, 3)?;
    let prefix = args.prefix(call.ctx)?;
    let (job, payload) = (args.arg()?, args.arg()?);
    Ok(Reply::Int(edits::setdata(
        &Queue::new(call, prefix),
        job,
        payload,
    )?))
}

/// `EMQ.PROGRESS P job progress`: 1, or -1 when the row is gone.
pub fn progress<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 3, 3)?;
    let prefix = args.prefix(call.ctx)?;
    let (job, progress) = (args.arg()?, args.arg()?);
    Ok(Reply::Int(edits::progress(
        &Queue::new(call, prefix),
        job,
        progress,
    )?))
}

/// `EMQ.LOG P job line [KEEP n]`: the lines kept, or -1.
pub fn log<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 3, 5)?;
    let prefix = args.prefix(call.ctx)?;
    let (job, line) = (args.arg()?, args.arg()?);
    let keep = match args.option("KEEP")? {
        None => None,
        Some(n) => {
            let keep = crate::model::grammar::int_in(n.bytes(), "KEEP", 1, i64::MAX, COUNT_RANGE)?;
            let start = call.ctx.string(format!("-{keep}").as_bytes());
            Some((usize::try_from(keep).unwrap_or(usize::MAX), start))
        }
    };
    let q = Queue::new(call, prefix);
    let keep = keep.as_ref().map(|(n, text)| (*n, text.as_arg()));
    Ok(Reply::Int(edits::log(&q, job, line, keep)?))
}

/// `EMQ.REMOVE P job [DEDUP id]`: 1, -1, or `EMQLOCK job is locked`.
pub fn remove<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 2, 4)?;
    let prefix = args.prefix(call.ctx)?;
    let job = args.arg()?;
    // An empty dedup id is none (EchoMQ's host passes "" for none).
    let dedup = args.option("DEDUP")?.filter(|d| !d.bytes().is_empty());
    Ok(Reply::Int(jobs::remove(&Queue::new(call, prefix), job, dedup)?))
}

/// `EMQ.REPROCESS P job`: 1, -1, or `EMQSTATE not dead`.
pub fn reprocess<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 2, 2)?;
    let prefix = args.prefix(call.ctx)?;
    let job = args.arg()?;
    Ok(Reply::Int(dead::reprocess(&Queue::new(call, prefix), job)?))
}

/// `EMQ.QDRAIN P [SCHEDULE]`: the number of jobs drained.
pub fn qdrain<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 1, 2)?;
    let prefix = args.prefix(call.ctx)?;
    let schedule = args.keyword("SCHEDULE");
    if args.left() > 0 {
        return Err(Error::Syntax);
    }
    Ok(Reply::Int(edits::qdrain(&Queue::new(call, prefix), schedule)?))
}
