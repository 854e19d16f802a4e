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
    let mut serving = Serving {
        pending,
        k,
        // Not recorded: a replica counts nothing (SPEC section 8).
        clamp: crate::model::schedule::Clamp::Depth,
        new_active: active,
        leaves,
        leased: Default::default(),
        strays: Vec::new(),
        // The primary replicates the rate's and the credit's writes as their
        // effects.
        rate: None,
        time: None,
        empties: false,
    };
    if !claim.take_heads(lane.bytes(), &mut serving, depth)? || serving.leased.is_empty() {
        return Err(mismatch());
    }
    serving.new_active = active
        .checked_add(serving.leased.len() as i64)
        .ok_or_else(mismatch)?;
    let served = q.call.repl.muted(|| claim.write(&lane, &mut serving, deadline))?;
    // This server's own AOF (and nothing else: a replica's replicas get the
    // primary's stream as it is).
    q.call.repl.itself();
    Ok(claim_reply(ClaimKind::Batch, lane, served))
}
