//! EchoMQ's flat (lane-less) queue (SPEC section 9): `@enqueue`, `@schedule`
//! and `@extend_locks`; its claims are `flat_claim.rs`. A flat job's row
//! names no lane; it waits in `P pending` (score 0, so in id order, as
//! EchoMQ mints ids in time order) or `P schedule`, and is leased in
//! `P active` as a lane job is.

use smallvec::SmallVec;

use crate::ffi::{word, Arg, Word};
use crate::model::error::Error;
use crate::queue::{Queue, Score};
use crate::runtime::stats;

/// EMQ.QENQUEUE: each `(job, payload)` in turn — a duplicate is skipped,
/// else its row is written (`state pending`, `attempts 0`, its payload) and
/// it joins `P pending` at score 0. The ids have passed the kind rule. The
/// queue's flat waiters are woken. Returns the number enqueued.
pub fn enqueue(q: &Queue, jobs: &[(Arg, Arg)]) -> Result<i64, Error> {
    let pending = q.flat()?;
    let fresh = q.fresh_rows(jobs)?;
    let mut added: Vec<Arg> = Vec::with_capacity(fresh.len());
    for (row, job, payload) in fresh {
        let pairs = [
            (word(Word::State), word(Word::Pending)),
            (word(Word::Attempts), word(Word::Zero)),
            (word(Word::Payload), payload),
        ];
        q.hset(row, &pairs, c"hset");
        added.push(job);
    }
    if added.is_empty() {
        return Ok(0);
    }
    q.zadd(pending, Score::zero(), &added);
    q.wake_flat_waiters();
    q.call.count(&stats::JOBS_ENQUEUED, added.len() as u64);
    Ok(added.len() as i64)
}

/// EMQ.QSCHEDULE: a new job's row (`state scheduled`, `attempts 0`, its
/// payload), into `P schedule` at `due`; 0 when its row exists.
pub fn schedule(q: &Queue, job: Arg, payload: Arg, due: i64) -> Result<i64, Error> {
    let set = q.schedule()?;
    let Some((row, job, payload)) = q.fresh_rows(&[(job, payload)])?.pop() else {
        return Ok(0);
    };
    let pairs = [
        (word(Word::State), word(Word::Scheduled)),
        (word(Word::Attempts), word(Word::Zero)),
        (word(Word::Payload), payload),
    ];
    q.hset(row, &pairs, c"hset");
    let text = q.ctx.string_from_i64(due);
    q.zadd(
        set,
        Score {
            value: due,
            text: text.as_arg(),
        },
        &[job],
    );
    Ok(1)
}

/// EMQ.MEXTEND: each leased job whose attempts is its token gets the
/// deadline; the others' ids are returned (a row gone, another token, or —
/// unlike the script, which adds such a job to `P active` — not leased).
pub fn mextend<'a>(q: &Queue, held: &[(Arg<'a>, Arg<'a>)], deadline: i64) -> Result<Vec<Arg<'a>>, Error> {
    let leases = q.leases()?;
    let mut extended: SmallVec<[Arg; 16]> = SmallVec::new();
    let mut failed = Vec::new();
    for &(job, token) in held {
        let row = q.fenced_row(job.bytes())?;
        let holds = row.attempts.as_ref().is_some_and(|a| a.bytes() == token.bytes());
        if holds && leases.zset_score(job).is_some() {
            extended.push(job);
        } else {
            failed.push(job);
        }
    }
    if !extended.is_empty() {
        let text = q.ctx.string_from_i64(deadline);
        q.zadd(
            leases,
            Score {
                value: deadline,
                text: text.as_arg(),
            },
            &extended,
        );
        q.call.count(&stats::JOBS_EXTENDED, extended.len() as u64);
    }
    Ok(failed)
}
