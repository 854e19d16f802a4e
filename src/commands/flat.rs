//! EchoMQ's flat (lane-less) queue: EMQ.QENQUEUE, EMQ.QSCHEDULE, EMQ.QCLAIM,
//! EMQ.QBCLAIM, EMQ.MEXTEND (`@enqueue`, `@schedule`, `@claim`, `@bclaim`,
//! `@extend_locks`; SPEC section 9).

use crate::ffi::{Arg, Argv, Ctx, Reply};
use crate::model::error::{Error, COUNT_RANGE};
use crate::model::grammar::LEASE_MAX;
use crate::queue::Queue;
use crate::runtime::Call;

use crate::engine::flat_claim::{self, FlatRequest};
use crate::engine::{flat, timer};

use super::args::{of_kind, Args};
use super::claim::block;

/// `(job, payload)` or `(job, token)` pairs: the rest of the arguments, an
/// even number of them (else the server's arity error).
fn pairs<'a>(args: &mut Args<'a>) -> Result<Vec<(Arg<'a>, Arg<'a>)>, Error> {
    let rest = args.rest();
    if rest.is_empty() || !rest.len().is_multiple_of(2) {
        return Err(Error::WrongArity);
    }
    Ok(rest.chunks(2).map(|p| (p[0], p[1])).collect())
}

/// `EMQ.QENQUEUE P job payload [job payload …]`: the number enqueued.
pub fn qenqueue<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 3, usize::MAX)?;
    // At least one pair (the arity the server checks is the first word's).
    let prefix = args.prefix(call.ctx)?;
    let jobs = pairs(&mut args)?;
    of_kind(call, jobs.iter().map(|j| j.0))?;
    let q = Queue::new(call, prefix);
    Ok(Reply::Int(flat::enqueue(&q, &jobs)?))
}

/// `EMQ.QSCHEDULE P job payload IN ms | AT ms`: 1, or 0 for a duplicate.
pub fn qschedule<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 5, 5)?;
    let prefix = args.prefix(call.ctx)?;
    let (job, payload) = (args.arg()?, args.arg()?);
    let due = args.when(call.ctx)?;
    of_kind(call, [job])?;
    let q = Queue::new(call, prefix);
    let added = flat::schedule(&q, job, payload, due)?;
    if added == 1 {
        timer::due(call.ctx, q.prefix_bytes, due);
    }
    Ok(Reply::Int(added))
}

fn parse<'a>(ctx: &Ctx, argv: Argv<'a>, batch: bool) -> Result<FlatRequest<'a>, Error> {
    let mut args = if batch {
        Args::new(argv, 3, 5)?
    } else {
        Args::new(argv, 2, 4)?
    };
    let prefix = args.prefix(ctx)?;
    let lease = args.lease()?;
    let batch = if batch {
        Some(args.int("n", 1, i64::MAX, COUNT_RANGE)?)
    } else {
        None
    };
    let block = block(ctx, &mut args)?;
    Ok(FlatRequest {
        prefix,
        lease,
        batch,
        block,
    })
}

/// `EMQ.QCLAIM P lease [BLOCK ms]`: `[id, payload, attempts]` or `[]`.
pub fn qclaim<'a>(call: &Call, argv: Argv<'a>) -> Result<Option<Reply>, Error> {
    flat_claim::claim(call, &parse(call.ctx, argv, false)?, qclaim_ready)
}

/// `EMQ.QBCLAIM P lease n [BLOCK ms]`: up to `n` of them, or `[]`.
pub fn qbclaim<'a>(call: &Call, argv: Argv<'a>) -> Result<Option<Reply>, Error> {
    flat_claim::claim(call, &parse(call.ctx, argv, true)?, qbclaim_ready)
}

fn qclaim_ready<'a>(ctx: &Ctx, argv: Argv<'a>) -> Result<Option<Reply>, Error> {
    ready(ctx, argv, false)
}

fn qbclaim_ready<'a>(ctx: &Ctx, argv: Argv<'a>) -> Result<Option<Reply>, Error> {
    ready(ctx, argv, true)
}

/// A waiter woken: as the lane claims' (its slot moving: it waits on).
fn ready<'a>(ctx: &Ctx, argv: Argv<'a>, batch: bool) -> Result<Option<Reply>, Error> {
    match parse(ctx, argv, batch) {
        Err(Error::SlotMoving) => Ok(None),
        Err(e) => Err(e),
        Ok(req) => {
            if crate::runtime::cluster::may_work(ctx, req.prefix.bytes(), true).is_err() {
                return Ok(None);
            }
            flat_claim::on_ready(ctx, &req)
        }
    }
}

/// `EMQ.MEXTEND P lease job token [job token …]`: the ids not extended.
pub fn mextend<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 4, usize::MAX)?;
    let prefix = args.prefix(call.ctx)?;
    let lease = args.lease()?;
    debug_assert!(lease <= LEASE_MAX);
    let held = pairs(&mut args)?;
    let q = Queue::new(call, prefix);
    let deadline = call.ctx.now_ms().saturating_add(lease);
    let failed = flat::mextend(&q, &held, deadline)?;
    if failed.len() < held.len() {
        // Leases made shorter: waiting clients' timer returns them at their end.
        timer::due(call.ctx, q.prefix_bytes, deadline);
    }
    Ok(Reply::Array(
        failed
            .into_iter()
            .map(|a| Reply::Bytes(a.bytes().to_vec()))
            .collect(),
    ))
}
