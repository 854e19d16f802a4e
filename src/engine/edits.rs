//! A job's edits and the flat queue's drain (SPEC section 9): EchoMQ's
//! `@update_data`, `@update_progress`, `@add_log` and admin `@drain`.
//! (`@remove_job` is `jobs::remove`, `@reprocess` `dead::reprocess`.)

use crate::ffi::{word, Arg, Key, Kind, RStr, Word};
use crate::model::error::Error;
use crate::model::{event, layout};
use crate::queue::Queue;

/// The row of `job` when it exists (as a hash; another type is `WRONGTYPE`,
/// what the script's `HSET` answers).
fn row<'q>(q: &Queue<'q>, job: Arg) -> Result<Option<Key<'q>>, Error> {
    let key = q.row_key(job.bytes())?.expect(Kind::Hash)?;
    Ok((key.kind() != Kind::Empty).then_some(key))
}

/// EMQ.SETDATA: the row's payload; 1, or -1 when the row is gone.
pub fn setdata(q: &Queue, job: Arg, payload: Arg) -> Result<i64, Error> {
    let Some(row) = row(q, job)? else { return Ok(-1) };
    q.hset(row, &[(word(Word::Payload), payload)], c"hset");
    Ok(1)
}

/// EMQ.PROGRESS: the row's `progress`, and `{"event":"progress",…}`
/// published on `P events`; 1, or -1 when the row is gone.
pub fn progress(q: &Queue, job: Arg, progress: Arg) -> Result<i64, Error> {
    let Some(row) = row(q, job)? else { return Ok(-1) };
    // The channel is the caller's to publish on, as the script's PUBLISH
    // checks it; before anything is written.
    let channel = q.ctx.string(&layout::events_parts(q.prefix_bytes).concat());
    q.ctx.check_publish(channel.as_arg())?;
    let field = q.ctx.string(b"progress");
    q.hset(row, &[(field.as_arg(), progress)], c"hset");
    let message = q.ctx.string(&event::progress(job.bytes(), progress.bytes()));
    // A replica publishes it too, as the script's PUBLISH does; in a cluster
    // the primary's publish reaches every node over the cluster bus, so a
    // replay there (a replica, a slot's import) publishes nothing again.
    let cluster = q.ctx.is_cluster();
    if !(cluster && q.ctx.replayed()) {
        q.ctx.publish(channel.as_arg(), message.as_arg());
    }
    if !cluster {
        q.call
            .repl
            .effect(c"PUBLISH", &[channel.as_arg(), message.as_arg()]);
    }
    Ok(1)
}

/// EMQ.LOG: `line` appended to `P job:<id>:logs`, which keeps its last
/// `keep` lines; the lines there (at most `keep`), or -1 when the row is
/// gone (a key of any type counts as the row, as the script's `EXISTS`).
pub fn log(q: &Queue, job: Arg, line: Arg, keep: Option<(usize, Arg)>) -> Result<i64, Error> {
    if q.row_key(job.bytes())?.kind() == Kind::Empty {
        return Ok(-1);
    }
    let logs = q.logs(job.bytes())?.expect(Kind::List)?;
    q.rpush(logs, &[line]);
    if let Some((keep, text)) = keep {
        q.ltrim_head(logs, keep, text);
    }
    Ok(logs.len() as i64)
}

/// EMQ.QDRAIN: every job of `P pending` (and of `P schedule` with
/// `schedule`) deleted with its row and logs, and the sets; the number of
/// ids met.
pub fn qdrain(q: &Queue, schedule: bool) -> Result<i64, Error> {
    let mut sets = vec![q.flat()?];
    if schedule {
        sets.push(q.schedule()?);
    }
    // Every key opened (its permission checked) before the first write.
    let mut keys: Vec<Key> = Vec::new();
    let mut met = 0;
    for set in &sets {
        let ids: Vec<RStr> = set
            .zset_range(f64::INFINITY, usize::MAX)
            .into_iter()
            .map(|(id, _)| id)
            .collect();
        met += ids.len() as i64;
        for id in ids {
            keys.push(q.row_key(id.bytes())?);
            keys.push(q.logs(id.bytes())?);
        }
    }
    for key in keys.into_iter().chain(sets) {
        q.del(key);
    }
    Ok(met)
}
