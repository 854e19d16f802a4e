//! `EMQ.TURN P lane deadline K leaves`: a served turn exactly as a primary
//! made it and replicated it (`emq.replicate command`) — rotate the ring,
//! take the lane's heads as the turn did (until K are leased under
//! `deadline`, the strays met on the way moved), and the lane leaves the
//! ring when `leaves` is 1. Internal: accepted only from the replication
//! stream or an AOF load, where the keyspace is the primary's at that point.

use crate::ffi::{Arg, Reply};
use crate::model::error::Error;
use crate::model::schedule::ClaimKind;
use crate::queue::Queue;

use super::plan::Serving;
use super::{claim_reply, Claim};

/// Replays a turn on `q`; a turn that does not fit this keyspace is refused
/// and changes nothing.
pub fn replay_turn(q: &Queue, lane_arg: Arg, deadline: i64, k: i64, leaves: bool) -> Result<Reply, Error> {
    // A replayed turn is as the primary made it: its credit replicates as
    // its effects.
    let claim = Claim::open(q, ClaimKind::Batch, crate::model::credit::Fairness::Count)?;
    let mismatch = || Error::TurnMismatch {
        lane: lane_arg.bytes().to_vec(),
        key: claim.ring.name().bytes().to_vec(),
    };
    let lane = crate::ffi::Text::new(claim.ring.list_get(0).ok_or_else(mismatch)?);
    if lane.bytes() != lane_arg.bytes() {
        return Err(mismatch());
    }
    let pending = q.pending_zset(lane.bytes())?;
    let active = crate::queue::stored_int(claim.active, lane.as_arg(), "active count of lane")
        .map_err(|_| mismatch())?
        .unwrap_or(0);
    let depth = pending.len() as u64;
    if (depth as i64) < k {
        return Err(mismatch());
    }
    let (leased, strays) = claim
        .take_heads(lane.bytes(), pending, k, depth)?
        .ok_or_else(mismatch)?;
    if leased.is_empty() {
        return Err(mismatch());
    }
    let new_active = active.checked_add(leased.len() as i64).ok_or_else(mismatch)?;
    let serving = Serving {
        pending,
        k,
        // Not recorded: a replica counts nothing (SPEC section 8).
        clamp: crate::model::schedule::Clamp::Depth,
        new_active,
        leaves,
        leased,
        strays,
        // The primary replicates the rate's and the credit's writes as their
        // effects.
        rate: None,
        time: None,
        empties: false,
    };
    let served = q.call.repl.muted(|| claim.write(&lane, serving, deadline))?;
    // This server's own AOF (and nothing else: a replica's replicas get the
    // primary's stream as it is).
    q.call.repl.itself();
    Ok(claim_reply(ClaimKind::Batch, lane.into_rstr(), served))
}
