//! Dead letters: EMQ.DEAD lists them, EMQ.REVIVE puts them back. (Jobs die
//! where their leases end: RETRY at its maximum, `returns.rs` of their
//! stalls.)

use crate::ffi::{word, Arg, RStr, Reply, Word};
use crate::model::error::Error;
use crate::model::grammar;
use crate::queue::{Queue, Score};
use crate::runtime::stats;

use super::books::Books;

/// EMQ.DEAD: the first `count` of `P dead` (score 0: in id order), each
/// `[id, lane, last_error]` (nil where the row has none).
pub fn list(q: &Queue, count: usize) -> Result<Reply, Error> {
    let dead = q.dead()?;
    let mut rows = Vec::new();
    for (job, _) in dead.zset_range(f64::INFINITY, count) {
        let row = q.row_or_none(job.bytes())?;
        let [group, error] = row.key.hash_get_many([word(Word::Group), word(Word::LastError)]);
        let text = |v: Option<RStr>| v.map_or(Reply::Null, Reply::Owned);
        rows.push(Reply::Array(vec![Reply::Owned(job), text(group), text(error)]));
    }
    Ok(Reply::Array(rows))
}

/// EMQ.REVIVE: dead jobs back to their lane (rung with a wake) or to
/// `P pending`, `state pending`, `last_error` and `stalled` removed,
/// `attempts` kept. A job not in `P dead`, without a row, or whose lane's
/// state is damaged (docs/damage.md, "Sweeps") is left as it is. Returns the
/// number revived.
pub fn revive(q: &Queue, jobs: Vec<Arg>) -> Result<i64, Error> {
    back_from_dead(q, jobs, &[word(Word::LastError), word(Word::Stalled)])
}

/// EMQ.REPROCESS (EchoMQ's `@reprocess`): -1 when the row is gone,
/// `EMQSTATE not dead` when the job is not in `P dead`; else, as REVIVE, back
/// to its lane or `P pending` with only `last_error` removed (as the script
/// does); reply 1 (0: left dead, its lane's state damaged). The script
/// sends a lane job to `P pending` (a named difference).
pub fn reprocess(q: &Queue, job: Arg) -> Result<i64, Error> {
    let row = q.row(job.bytes())?;
    if !row.exists {
        return Ok(-1);
    }
    if q.dead()?.zset_score(job).is_none() {
        return Err(Error::NotDead);
    }
    back_from_dead(q, vec![job], &[word(Word::LastError)])
}

/// Dead jobs back, `clear` removed from their rows.
fn back_from_dead(q: &Queue, jobs: Vec<Arg>, clear: &[Arg]) -> Result<i64, Error> {
    let dead = q.dead()?;
    let mut books = Books::new(q, "dead job(s)");
    let mut back: Vec<(Arg, crate::ffi::Key, Option<usize>)> = Vec::new();
    for job in grammar::distinct(jobs, |a| a.bytes()) {
        if dead.zset_score(job).is_none() {
            continue;
        }
        let row = q.row_or_none(job.bytes())?;
        if !row.exists {
            continue;
        }
        let Some(book) = books.home(row.lane())? else {
            continue;
        };
        back.push((job, row.key, book));
    }
    if back.is_empty() {
        // Nothing to write: the books report what they kept.
        books.write()?;
        return Ok(0);
    }
    let flat = match back.iter().any(|b| b.2.is_none()) {
        true => Some(q.flat()?),
        false => None,
    };
    let ids: Vec<Arg> = back.iter().map(|b| b.0).collect();
    q.zrem(dead, &ids, c"zrem");
    let mut flat_back = Vec::new();
    for (job, row, book) in &back {
        q.hdel(*row, clear);
        q.hset(*row, &[(word(Word::State), word(Word::Pending))], c"hset");
        match book {
            Some(b) => books.add(*b, q.ctx.string(job.bytes())),
            None => flat_back.push(*job),
        }
    }
    if let Some(flat) = flat {
        q.zadd(flat, Score::zero(), &flat_back);
        q.wake_flat_waiters();
    }
    books.write()?;
    q.call.count(&stats::JOBS_REVIVED, back.len() as u64);
    Ok(back.len() as i64)
}
