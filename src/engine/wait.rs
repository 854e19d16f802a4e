//! Claims that wait (docs/commands.md, "BLOCK"): a claim that can serve
//! nothing blocks its client on `P ring`, without polling, until a lane joins
//! the ring (whatever pushes it: a command, a producer's own script, the
//! timer) or the queue is resumed; then it claims once.
//!
//! Before it waits, a claim looks, without writing, for the first lane of the
//! ring that would serve; only then does it run the turns up to it (dropping
//! and skipping the lanes before it). A claim that would serve nothing writes
//! nothing and waits: a blocked client's wake-up that writes and keeps
//! waiting aborts Redis 7.0.

use crate::ffi::block::{Ready, Wait};
use crate::ffi::{Arg, Ctx, Reply};
use crate::model::error::Error;
use crate::model::schedule::ClaimKind;
use crate::queue::Queue;
use crate::runtime::{cluster, stats, Call};

use super::timer;
use super::turn::Claim;

/// A claim as its client asked for it.
pub struct Request<'a> {
    pub prefix: Arg<'a>,
    /// The prefix's bytes (read once, when parsed).
    pub prefix_bytes: &'a [u8],
    pub kind: ClaimKind,
    pub lease: i64,
    /// The BLOCK timeout in ms (0 = forever).
    pub block: Option<i64>,
}

/// The reply, or `None` when the client now waits (answered later by
/// `ready`, which parses its arguments again and calls [`on_ready`]).
pub fn claim(call: &Call, req: &Request, ready: Ready) -> Result<Option<Reply>, Error> {
    let q = Queue::known(call, req.prefix, req.prefix_bytes);
    let blocking = req.block.filter(|_| call.ctx.may_block());
    // A paused queue serves nothing and writes nothing (EchoMQ's host checks
    // `P meta` before it calls the script).
    let (paused, fairness) = q.queue_state()?;
    // Borrowed where it was built: a claim is too large to move.
    let opened = Claim::open(&q, req.kind, fairness);
    let claim = match opened {
        Ok(ref claim) => claim,
        Err(e) => return Err(e),
    };
    let deadline = call.ctx.now_ms().saturating_add(req.lease);
    let Some(timeout) = blocking else {
        if paused {
            call.count(&stats::CLAIMS_EMPTY, 1);
            return Ok(Some(Reply::empty()));
        }
        // Returned as it came (a reply is not moved out and back in).
        let served = claim.turn(deadline);
        if let Ok(None) = served {
            call.count(&stats::CLAIMS_EMPTY, 1);
            return Ok(Some(Reply::empty()));
        }
        return served;
    };
    block(call, req, ready, (&q, claim), paused, deadline, timeout)
}

/// A claim that may block: it serves the first lane that would serve, or
/// waits. Out of line: a claim that does not block runs none of it.
#[inline(never)]
fn block(
    call: &Call,
    req: &Request,
    ready: Ready,
    (q, claim): (&Queue, &Claim),
    paused: bool,
    deadline: i64,
    timeout: i64,
) -> Result<Option<Reply>, Error> {
    if !paused {
        // Expired leases go back first, even when nothing else can be served
        // (the call's own context may write and then wait; a wake-up may not).
        let first = claim.first_servable()?;
        // Lanes whose time in `P gnext` has come are rung first, as expired
        // leases go back first.
        let first = if claim.return_first()? {
            claim.first_servable()?
        } else {
            first
        };
        if let Some(reply) = claim.serve_from(first, deadline)? {
            return Ok(Some(reply));
        }
    }
    // Nothing can be served: wait on the ring, woken when a lane joins it (and
    // by the timer when leases run out or jobs come due).
    stats::BLOCKED.add(1);
    let watch = timer::watch(call.ctx, req.prefix_bytes, earliest(q, claim));
    if let Some(at) = claim.held_until() {
        timer::wake_at(call.ctx, req.prefix_bytes, at);
    }
    call.ctx.block_on_key(
        claim.ring_name(),
        timeout,
        Wait {
            ready,
            ended: wait_ended,
            arg: watch,
        },
    );
    Ok(None)
}

/// The queue's next lease deadline, due time or time in `P gnext`, whichever
/// is first.
fn earliest(q: &Queue, claim: &Claim) -> Option<i64> {
    let lease = claim.earliest();
    let due = q.schedule().ok().and_then(|s| s.zset_first_score());
    [lease, due].into_iter().flatten().map(|t| t as i64).min()
}

/// A blocked claim's ring was signalled: claim once if a lane can be served
/// (`Some`), else keep waiting without writing anything (`None`). One that
/// wrote and then served nothing replies an empty claim.
pub fn on_ready(ctx: &Ctx, req: &Request) -> Result<Option<Reply>, Error> {
    // No client sent this: the slot is read afresh before anything is
    // written (a key-by-key migration may have begun since the last tick).
    if cluster::may_work(ctx, req.prefix_bytes, true).is_err() {
        return Ok(None);
    }
    let call = Call::new(ctx, false);
    let q = Queue::known(&call, req.prefix, req.prefix_bytes);
    let (paused, fairness) = q.queue_state()?;
    if paused {
        return Ok(None);
    }
    let claim = Claim::open(&q, req.kind, fairness)?;
    let deadline = ctx.now_ms().saturating_add(req.lease);
    let Some(first) = claim.first_servable()? else {
        if let Some(at) = claim.held_until() {
            timer::wake_at(ctx, req.prefix_bytes, at);
        }
        return Ok(None);
    };
    // It would serve: now it may write. Returning expired leases and
    // ringing due lanes most often make lanes more servable, but a job
    // returned with a damaged row heads its lane, which is then skipped.
    let served = if claim.return_first()? {
        claim.serve_from(claim.first_servable()?, deadline)?
    } else {
        claim.serve_from(Some(first), deadline)?
    };
    // A wake-up that wrote may not keep waiting (Redis 7.0 aborts): it ends
    // the wait served nothing, as a polling claim would.
    Ok(served.or_else(|| {
        call.repl.wrote().then(|| {
            call.count(&stats::CLAIMS_EMPTY, 1);
            Reply::empty()
        })
    }))
}

/// However a wait ends (served, timed out, gone): one waiter fewer.
pub(super) fn wait_ended(ctx: Option<&Ctx>, watch: u64) {
    stats::BLOCKED.sub(1);
    timer::unwatch(ctx, watch);
}
