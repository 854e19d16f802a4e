//! EMQ.CLAIM, EMQ.WCLAIM, EMQ.BCLAIM `P lease [BLOCK ms]` (EchoMQ's
//! `@gclaim`, `@gwclaim`, `@gbclaim`), and the internal EMQ.TURN a served
//! turn replicates as under `emq.replicate command`.

use crate::ffi::{Argv, Ctx, Reply};
use crate::model::error::{Error, BOOLEAN, COUNT_RANGE, INTEGER, TIMEOUT_RANGE};
use crate::model::grammar;
use crate::model::schedule::ClaimKind;
use crate::queue::Queue;
use crate::runtime::Call;

use crate::engine::turn::replay_turn;
use crate::engine::wait::{self, Request};

use super::args::Args;

/// `EMQ.CLAIM P lease [BLOCK ms]`: one head; reply its four fields flat.
pub fn claim<'a>(call: &Call, argv: Argv<'a>) -> Result<Option<Reply>, Error> {
    let req = parse(call.ctx, argv, ClaimKind::One)?;
    wait::claim(call, &req, claim_ready)
}

/// `EMQ.WCLAIM P lease [BLOCK ms]`: the lane's weight.
pub fn wclaim<'a>(call: &Call, argv: Argv<'a>) -> Result<Option<Reply>, Error> {
    let req = parse(call.ctx, argv, ClaimKind::Weighted)?;
    wait::claim(call, &req, wclaim_ready)
}

/// `EMQ.BCLAIM P lease [BLOCK ms]`: the lane's whole headroom.
pub fn bclaim<'a>(call: &Call, argv: Argv<'a>) -> Result<Option<Reply>, Error> {
    let req = parse(call.ctx, argv, ClaimKind::Batch)?;
    wait::claim(call, &req, bclaim_ready)
}

fn claim_ready<'a>(ctx: &Ctx, argv: Argv<'a>) -> Result<Option<Reply>, Error> {
    ready(ctx, argv, ClaimKind::One)
}

fn wclaim_ready<'a>(ctx: &Ctx, argv: Argv<'a>) -> Result<Option<Reply>, Error> {
    ready(ctx, argv, ClaimKind::Weighted)
}

fn bclaim_ready<'a>(ctx: &Ctx, argv: Argv<'a>) -> Result<Option<Reply>, Error> {
    ready(ctx, argv, ClaimKind::Batch)
}

/// A waiter woken: it claims, unless its queue's slot is moving key by key
/// or has left this node; then it waits on (the server answers it `MOVED`
/// once the slot has its new owner).
fn ready<'a>(ctx: &Ctx, argv: Argv<'a>, kind: ClaimKind) -> Result<Option<Reply>, Error> {
    match parse(ctx, argv, kind) {
        Err(Error::SlotMoving) => Ok(None),
        Err(e) => Err(e),
        Ok(req) => wait::on_ready(ctx, &req),
    }
}

/// The most a BLOCK timeout may be: the server adds it to its clock and
/// refuses a sum past 2^63 (kept a day clear of that, for clocks that differ).
fn block_limit(now: i64) -> i64 {
    i64::MAX - now.max(0) - 86_400_000
}

fn parse<'a>(ctx: &Ctx, argv: Argv<'a>, kind: ClaimKind) -> Result<Request<'a>, Error> {
    let mut args = Args::new(argv, 2, 4)?;
    let (prefix, prefix_bytes) = args.prefix_and_bytes(ctx)?;
    let lease = args.lease()?;
    let block = block(ctx, &mut args)?;
    Ok(Request {
        prefix,
        prefix_bytes,
        kind,
        lease,
        block,
    })
}

/// The trailing `[BLOCK ms]`: the timeout (0 = forever), one the server
/// accepts.
pub(super) fn block(ctx: &Ctx, args: &mut Args) -> Result<Option<i64>, Error> {
    match args.option("BLOCK")? {
        None => Ok(None),
        Some(ms) => {
            let ms = grammar::int_in(ms.bytes(), "BLOCK timeout", 0, i64::MAX, TIMEOUT_RANGE)?;
            if ms > block_limit(ctx.now_ms()) {
                return Err(Error::TimeoutRange);
            }
            Ok(Some(ms))
        }
    }
}

/// `EMQ.TURN P lane deadline K leaves`: internal, accepted only from the
/// replication stream or an AOF load.
pub fn turn<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 5, 5)?;
    if !call.ctx.replayed() {
        return Err(Error::InternalCommand("EMQ.TURN"));
    }
    let prefix = args.prefix(call.ctx)?;
    let lane = args.lane()?;
    let deadline = args.int("deadline", i64::MIN, i64::MAX, INTEGER)?;
    let k = args.int("k", 1, i64::MAX, COUNT_RANGE)?;
    let leaves = args.int("leaves", 0, 1, BOOLEAN)? == 1;
    let q = Queue::new(call, prefix);
    replay_turn(&q, lane, deadline, k, leaves)
}

#[cfg(test)]
mod tests {
    use super::block_limit;

    #[test]
    fn the_block_limit_leaves_room_on_the_servers_clock() {
        let now = 1_800_000_000_000;
        assert!(block_limit(now).checked_add(now).is_some());
        assert!(
            block_limit(now) > 1 << 62,
            "any timeout a person means is accepted"
        );
    }
}
