//! Lane administration (EchoMQ's `@genqueue`, `@gweight`, `@gpause`,
//! `@gresume`, `@glimit`, `@greassign`, `@gdrain`): every change that can
//! alter a lane's serviceability reads the lane before and after and lets the
//! ring follow (`schedule::ring_change`); none asks the ring where a lane is
//! unless the lane must leave it.

use crate::ffi::{word, Arg, Key, Word};
use crate::model::credit::Fairness;
use crate::model::error::Error;
use crate::model::row::{head_fate, Fate};
use crate::model::schedule::{ring_change, Lane};
use crate::queue::{stored_int, Queue, Score};
use crate::runtime::stats;

/// EMQ.ENQUEUE: each `(job, payload)` in turn — a job whose row exists is a
/// duplicate and is skipped; otherwise its row is written (`state pending`,
/// `attempts 0`, its payload, its lane) and it joins the lane at score 0.
/// The lane joins the ring (with a wake) if it became serviceable. The ids
/// have passed the kind rule. Returns the number enqueued.
pub fn enqueue(q: &Queue, lane: Arg, jobs: &[(Arg, Arg)]) -> Result<i64, Error> {
    q.joinable()?;
    let before = q.lane(lane)?;
    let pending = q.pending_zset(lane.bytes())?;
    let fresh = q.fresh_rows(jobs)?;
    let mut added: Vec<Arg> = Vec::with_capacity(fresh.len());
    for (row, job, payload) in fresh {
        q.hset(
            row,
            &[
                (word(Word::State), word(Word::Pending)),
                (word(Word::Attempts), word(Word::Zero)),
                (word(Word::Payload), payload),
                (word(Word::Group), lane),
            ],
            c"hset",
        );
        added.push(job);
    }
    if added.is_empty() {
        return Ok(0);
    }
    q.zadd(pending, Score::zero(), &added);
    let after = Lane {
        depth: before.depth + added.len() as u64,
        ..before
    };
    q.follow(lane, ring_change(&before, &after))?;
    q.call.count(&stats::JOBS_ENQUEUED, added.len() as u64);
    Ok(added.len() as i64)
}

/// EMQ.WEIGHT: one `HSET P gweight lane weight` (validated by the caller).
/// A weight never changes serviceability: the ring is untouched.
pub fn weight(q: &Queue, lane: Arg, weight: Arg) -> Result<(), Error> {
    let hash = q.weights()?;
    q.hset(hash, &[(lane, weight)], c"hset");
    // A damaged weight just mended: the lane, skipped until now, may serve.
    q.wake_waiters();
    Ok(())
}

/// Whether the lane may be in the ring now: serviceable, or of a state too
/// damaged to tell.
fn maybe_ringed(q: &Queue, lane: Arg) -> Result<bool, Error> {
    let read = q.lane_read(lane);
    read.paused.clone()?;
    Ok(read.lane().map_or(true, |l| l.serviceable()))
}

/// EMQ.PAUSE: into `P paused`, out of the ring.
pub fn pause(q: &Queue, lane: Arg) -> Result<(), Error> {
    let ring = q.ring()?;
    let ringed = maybe_ringed(q, lane)?;
    q.paused_set(lane, true)?;
    if ringed {
        q.lrem(ring, lane);
    }
    Ok(())
}

/// EMQ.RESUME: out of `P paused`; the lane joins the ring (with a wake) if
/// that makes it serviceable.
pub fn resume(q: &Queue, lane: Arg) -> Result<(), Error> {
    q.joinable()?;
    let before = q.lane(lane)?;
    if q.paused_set(lane, false)? {
        q.follow(
            lane,
            ring_change(
                &before,
                &Lane {
                    paused: false,
                    ..before
                },
            ),
        )?;
    }
    Ok(())
}

/// EMQ.LIMIT: sets (`Some`) or removes the lane's ceiling; the ring follows.
/// A damaged ceiling is what an operator sets a new one to fix: it is
/// replaced, and the ring then follows the lane's new state alone.
pub fn limit(q: &Queue, lane: Arg, text: Arg, limit: Option<i64>) -> Result<(), Error> {
    q.joinable()?;
    let hash = q.limits()?;
    let old = stored_int(hash, lane, "limit of lane");
    let before = q.lane_with_limit(lane, old.clone().unwrap_or(None))?;
    match limit {
        Some(_) => q.hset(hash, &[(lane, text)], c"hset"),
        None => q.hdel(hash, &[lane]),
    }
    let after = Lane { limit, ..before };
    match old {
        Ok(_) => q.follow(lane, ring_change(&before, &after))?,
        Err(_) => q.settle(lane, after.serviceable())?,
    }
    q.wake_waiters();
    Ok(())
}

/// EMQ.REASSIGN: -1 no row or a row without a lane; 0 the row names `to`
/// already; -2 the job is not pending in its lane; 1 moved.
pub fn reassign(q: &Queue, job: Arg, to: Arg) -> Result<i64, Error> {
    let row = q.row(job.bytes())?;
    let Some(from) = row.group.as_ref().filter(|_| row.exists) else {
        return Ok(-1);
    };
    if from.bytes() == to.bytes() {
        return Ok(0);
    }
    let from_set = q.pending_zset(from.bytes())?;
    if from_set.zset_score(job).is_none() {
        return Ok(-2);
    }
    q.joinable()?;
    let to_set = q.pending_zset(to.bytes())?;
    let before_from = q.lane(from.as_arg())?;
    let before_to = q.lane(to)?;
    q.zrem(from_set, &[job], c"zrem");
    q.zadd(to_set, Score::zero(), &[job]);
    q.hset(row.key, &[(word(Word::Group), to)], c"hset");
    let after_to = Lane {
        depth: to_set.len() as u64,
        ..before_to
    };
    q.follow(to, ring_change(&before_to, &after_to))?;
    let after_from = Lane {
        depth: from_set.len() as u64,
        ..before_from
    };
    q.follow(from.as_arg(), ring_change(&before_from, &after_from))?;
    Ok(1)
}

/// EMQ.DRAIN: every pending job of the lane loses its row and its `:logs`
/// list, the lane's set is deleted, the lane leaves the ring; its leases,
/// count, ceiling, weight and pause stay. A member whose row is not this
/// lane's waiting job (a stray) keeps its row. Returns the number drained.
pub fn drain(q: &Queue, lane: Arg) -> Result<i64, Error> {
    let ring = q.ring()?;
    let set = q.pending_zset(lane.bytes())?;
    let ringed = maybe_ringed(q, lane)?;
    let members = set.zset_range(f64::INFINITY, usize::MAX);
    // Each own row and its logs opened (their permissions checked) before
    // the first write.
    let mut own: Vec<(Key, Key)> = Vec::with_capacity(members.len());
    for (job, _) in &members {
        let row = q.row_or_none(job.bytes())?;
        if !row.exists
            || matches!(
                head_fate(lane.bytes(), &row.view()),
                Fate::Lease(_) | Fate::Damaged
            )
        {
            own.push((row.key, q.logs(job.bytes())?));
        }
    }
    for (row, logs) in own {
        q.del(row);
        q.del(logs);
    }
    q.del(set);
    if ringed {
        q.lrem(ring, lane);
    }
    Ok(members.len() as i64)
}

/// EMQ.QPAUSE: `HSET P meta paused 1`.
pub fn queue_pause(q: &Queue) -> Result<(), Error> {
    let meta = q.meta()?;
    q.hset(meta, &[(word(Word::Paused), word(Word::One))], c"hset");
    Ok(())
}

/// EMQ.QRESUME: `HDEL P meta paused`, and the waiting claims are woken.
pub fn queue_resume(q: &Queue) -> Result<(), Error> {
    let meta = q.meta()?;
    q.hdel(meta, &[word(Word::Paused)]);
    q.wake_waiters();
    Ok(())
}

/// EMQ.POLICY fairness: stores fairness by time with its quantum in
/// `P meta`, or removes it (count: EchoMQ's rule). Credits and costs stay as
/// they are (a switch back to time goes on from them).
pub fn fairness(q: &Queue, fairness: Fairness) -> Result<(), Error> {
    let meta = q.meta()?;
    match fairness {
        Fairness::Time { quantum_ms } => {
            let quantum = q.ctx.string_from_i64(quantum_ms);
            q.hset(
                meta,
                &[
                    (word(Word::Fairness), word(Word::Time)),
                    (word(Word::Quantum), quantum.as_arg()),
                ],
                c"hset",
            );
        }
        Fairness::Count => q.hdel(meta, &[word(Word::Fairness), word(Word::Quantum)]),
    }
    Ok(())
}

/// EMQ.POLICY max-stalled: stores (`Some`) or removes the stall threshold in
/// `P meta`.
pub fn policy(q: &Queue, max: Option<Arg>) -> Result<(), Error> {
    let meta = q.meta()?;
    match max {
        Some(n) => q.hset(meta, &[(word(Word::MaxStalled), n)], c"hset"),
        None => q.hdel(meta, &[word(Word::MaxStalled)]),
    }
    Ok(())
}
