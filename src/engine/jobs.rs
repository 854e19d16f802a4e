//! A job's transitions after its claim (EchoMQ's `@complete`, `@retry`,
//! `@delay`, `@extend_lock`): each fenced on the row's `attempts`, the token
//! its claim returned, compared as the decimal string the scripts compare.
//!
//! A job *leaves its lease* as the scripts do it: out of `P active`; for a
//! lane job its lane's count drops by one (the field removed at 0) and the
//! lane joins the ring (with a wake) if that makes it serviceable. A job that
//! was not leased leaves where it waits instead — its lane (which leaves the
//! ring if now empty) or `P pending` — and one scheduled or dead leaves
//! `P schedule` / `P dead` (docs/damage.md names where this differs from the
//! scripts).

use crate::ffi::{word, Arg, Key, Kind, RStr, Word};
use crate::model::error::{Error, INTEGER};
use crate::model::grammar::parse_i64;
use crate::model::layout;
use crate::model::row::State;
use crate::model::schedule::{ring_change, Lane};
use crate::queue::{stored_int, Queue, Row, Score};

use super::counts;

/// Where a job leaves from.
enum Leave<'q> {
    /// Its lease (`P active`); for a lane job, its count before.
    Lease { lane: Option<Counted> },
    /// Its lane's pending set, the lane before.
    Lane { lane: RStr, before: Lane, set: Key<'q> },
    /// A set where it sits without a lane or a count (`P pending`,
    /// `P schedule`, `P dead`).
    Set(Key<'q>),
}

/// A lane whose count is about to drop by one: the count, and the whole
/// lane when it has a ceiling — the only case where its count decides
/// whether it is serviceable, so the only one where the ring may change
/// (its depth, pause and rate are then not read: a lease ending cannot
/// change them).
struct Counted {
    name: RStr,
    active: i64,
    ceiled: Option<Lane>,
}

fn counted(q: &Queue, lane: &[u8]) -> Result<Counted, Error> {
    let name = q.ctx.string(lane);
    let arg = name.as_arg();
    let active = stored_int(q.active()?, arg, "active count of lane")?.unwrap_or(0);
    let ceiled = match stored_int(q.limits()?, arg, "limit of lane")? {
        None => None,
        Some(_) => {
            q.joinable()?;
            Some(q.lane(arg)?)
        }
    };
    Ok(Counted { name, active, ceiled })
}

/// The row of `job` when `token` is its attempts; `Ok(None)` when the row is
/// gone (or has no attempts: what the scripts read as gone); `stale` when
/// the token is another.
pub fn fenced<'q>(
    q: &Queue<'q>,
    job: Arg,
    token: Arg,
    stale: &'static str,
) -> Result<Option<Row<'q>>, Error> {
    let row = q.fenced_row(job.bytes())?;
    let Some(attempts) = &row.attempts else {
        return Ok(None);
    };
    if attempts.bytes() != token.bytes() {
        return Err(Error::Stale(stale));
    }
    Ok(Some(row))
}

/// Reads where `job` leaves from (checking each key it will write).
fn plan_leave<'q>(q: &Queue<'q>, job: Arg, row: &Row<'q>) -> Result<Leave<'q>, Error> {
    let lane_state = |lane: &[u8]| -> Result<(RStr, Lane), Error> {
        let name = q.ctx.string(lane);
        let before = q.lane(name.as_arg())?;
        Ok((name, before))
    };
    if q.leases()?.zset_score(job).is_some() {
        let lane = row.lane().map(|l| counted(q, l)).transpose()?;
        if let Some(lane) = &lane {
            if lane.active.checked_sub(1).is_none() {
                return Err(Error::Overflow {
                    what: "active count of lane",
                    field: lane.name.bytes().to_vec(),
                    key: q.active()?.name().bytes().to_vec(),
                });
            }
        }
        // Fairness by time corrects the lane's charge: its keys are checked
        // now.
        super::fairness::check(q, matches!(row.stamp, Some(Ok(_))))?;
        return Ok(Leave::Lease { lane });
    }
    match row.state_now() {
        Some(State::Scheduled) => Ok(Leave::Set(q.schedule()?)),
        Some(State::Dead) => Ok(Leave::Set(q.dead()?)),
        _ => match row.lane() {
            Some(lane) => {
                let (lane, before) = lane_state(lane)?;
                // A job leaving its lane can only make the lane leave the
                // ring, never join it: `P wake` is not touched, as by the
                // script.
                q.ring()?;
                let set = q.pending_zset(lane.bytes())?;
                Ok(Leave::Lane { lane, before, set })
            }
            None => Ok(Leave::Set(q.flat()?)),
        },
    }
}

/// Where the row is once the job left: kept (its stamp then goes), or
/// deleted by the command (COMPLETE).
#[derive(Clone, Copy, PartialEq, Eq)]
enum RowAfter {
    Kept,
    Deleted,
}

fn apply_leave(q: &Queue, job: Arg, leave: Leave, row: &Row, after: RowAfter) -> Result<(), Error> {
    match leave {
        Leave::Lease { lane } => {
            q.zrem(q.leases()?, &[job], c"zrem");
            if let Some(lane) = lane {
                let now = q.ctx.now_ms();
                let used = super::figures::lease_ended(q, lane.name.bytes(), job.bytes(), now);
                let kept = (after == RowAfter::Kept).then_some(row.key);
                super::fairness::lease_ended(q, lane.name.bytes(), kept, row.stamp, now, used);
                q.set_count(q.active()?, lane.name.as_arg(), lane.active - 1);
                if let Some(before) = lane.ceiled {
                    let after = Lane {
                        active: before.active - 1,
                        ..before
                    };
                    q.follow(lane.name.as_arg(), ring_change(&before, &after))?;
                }
            }
        }
        Leave::Lane { lane, before, set } => {
            q.zrem(set, &[job], c"zrem");
            let after = Lane {
                depth: set.len() as u64,
                ..before
            };
            q.follow(lane.as_arg(), ring_change(&before, &after))?;
        }
        Leave::Set(set) => q.zrem(set, &[job], c"zrem"),
    }
    Ok(())
}

/// EMQ.COMPLETE: reply 1, or 0 when the row is gone.
pub fn complete(q: &Queue, job: Arg, token: Arg) -> Result<i64, Error> {
    let Some(row) = fenced(q, job, token, "complete token mismatch")? else {
        return Ok(0);
    };
    let leave = plan_leave(q, job, &row)?;
    let completed = counts::completed_count(q, 1)?;
    apply_leave(q, job, leave, &row, RowAfter::Deleted)?;
    q.del(row.key);
    completed.add(q);
    Ok(1)
}

/// EMQ.REMOVE: -1 when the row is gone; `EMQLOCK` when a flow holds the
/// job (`P job:<id>:lock`, or the row's `lock` field); else the job leaves
/// where it is — its lease (its lane's count lowered), its lane, or a set —
/// and its row and logs are deleted, and its dedup key `P de:<dedup>` when
/// that names it. Reply 1.
pub fn remove(q: &Queue, job: Arg, dedup: Option<Arg>) -> Result<i64, Error> {
    let row = q.fenced_row(job.bytes())?;
    if !row.exists {
        return Ok(-1);
    }
    let lock = q.ctx.key(&layout::lock_parts(q.prefix_bytes, job.bytes()))?;
    if lock.kind() != Kind::Empty || row.key.hash_has(q.ctx.string(b"lock").as_arg()) {
        return Err(Error::Locked);
    }
    let dedup = match dedup {
        Some(id) => {
            let key = q.ctx.key(&layout::dedup_parts(q.prefix_bytes, id.bytes()))?;
            if !matches!(key.kind(), Kind::Empty | Kind::String) {
                return Err(Error::WrongType);
            }
            (key.string_value().as_deref() == Some(job.bytes())).then_some(key)
        }
        None => None,
    };
    let logs = q.logs(job.bytes())?;
    let leave = plan_leave(q, job, &row)?;
    apply_leave(q, job, leave, &row, RowAfter::Deleted)?;
    q.del(row.key);
    q.del(logs);
    if let Some(key) = dedup {
        q.del(key);
    }
    Ok(1)
}

/// What a RETRY did.
pub enum Retried {
    Scheduled(i64),
    Dead,
}

/// EMQ.RETRY: delayed by `delay` ms, or dead at `max` attempts.
pub fn retry(q: &Queue, job: Arg, token: Arg, delay: i64, max: i64, error: Arg) -> Result<Retried, Error> {
    let Some(row) = fenced(q, job, token, "retry token mismatch")? else {
        return Err(Error::Stale("job gone"));
    };
    let attempts = row
        .attempts
        .as_ref()
        .and_then(|a| parse_i64(a.bytes()))
        .ok_or_else(|| Error::bad_stored("attempts of job", job.bytes(), row.key.name().bytes(), INTEGER))?;
    let leave = plan_leave(q, job, &row)?;
    if attempts >= max {
        let dead = q.dead()?;
        let failed = counts::failed_count(q, 1)?;
        apply_leave(q, job, leave, &row, RowAfter::Kept)?;
        q.hset(
            row.key,
            &[
                (word(Word::LastError), error),
                (word(Word::State), word(Word::Dead)),
            ],
            c"hset",
        );
        q.zadd(dead, Score::zero(), &[job]);
        failed.add(q);
        return Ok(Retried::Dead);
    }
    let schedule = q.schedule()?;
    let due = q.ctx.now_ms().saturating_add(delay);
    apply_leave(q, job, leave, &row, RowAfter::Kept)?;
    q.hset(
        row.key,
        &[
            (word(Word::LastError), error),
            (word(Word::State), word(Word::Scheduled)),
        ],
        c"hset",
    );
    let due_text = q.ctx.string_from_i64(due);
    q.zadd(
        schedule,
        Score {
            value: due,
            text: due_text.as_arg(),
        },
        &[job],
    );
    Ok(Retried::Scheduled(due))
}

/// EMQ.DELAY: into `P schedule` at `due`, `state scheduled`, attempts kept.
pub fn delay(q: &Queue, job: Arg, token: Arg, due: i64) -> Result<(), Error> {
    let Some(row) = fenced(q, job, token, "delay token mismatch")? else {
        return Err(Error::Stale("job gone"));
    };
    let leave = plan_leave(q, job, &row)?;
    let schedule = q.schedule()?;
    apply_leave(q, job, leave, &row, RowAfter::Kept)?;
    q.hset(row.key, &[(word(Word::State), word(Word::Scheduled))], c"hset");
    let due_text = q.ctx.string_from_i64(due);
    q.zadd(
        schedule,
        Score {
            value: due,
            text: due_text.as_arg(),
        },
        &[job],
    );
    Ok(())
}

/// EMQ.EXTEND: reply 1 (the deadline moved to `deadline`), 0 when the job
/// is not leased, -1 when its row is gone.
pub fn extend(q: &Queue, job: Arg, token: Arg, deadline: i64) -> Result<i64, Error> {
    if fenced(q, job, token, "extend token mismatch")?.is_none() {
        return Ok(-1);
    }
    let leases = q.leases()?;
    if leases.zset_score(job).is_none() {
        return Ok(0);
    }
    let text = q.ctx.string_from_i64(deadline);
    q.zadd(
        leases,
        Score {
            value: deadline,
            text: text.as_arg(),
        },
        &[job],
    );
    Ok(1)
}
