//! Due jobs back to waiting (EMQ.PROMOTE, and the timer at their due time):
//! each leaves `P schedule` for its lane at score 0 (rung with a wake if that
//! makes it serviceable) or, with no lane, for `P pending`, `state pending`.
//! An entry whose row is missing or not `scheduled` is only removed (a
//! script would write a ghost row for it); one whose lane's state is damaged
//! stays due until the lane is mended, and the sweep goes on past it
//! (`books.rs`, at most `passes` of them a call).

use crate::ffi::{word, Arg, Key, RStr, Word};
use crate::model::error::Error;
use crate::model::row::State;
use crate::queue::{Queue, Score};
use crate::runtime::stats;

use super::books::Books;

pub struct Promoted {
    pub promoted: usize,
    pub dropped: usize,
}

impl Promoted {
    pub fn ended(&self) -> usize {
        self.promoted + self.dropped
    }
}

enum Due<'q> {
    Dropped,
    Back { row: Key<'q>, book: Option<usize> },
}

/// Promotes the due jobs, earliest first, at most `max`, passing over at
/// most `passes` whose lane is damaged; reads and checks everything first,
/// then writes.
pub fn promote_due(q: &Queue, max: usize, passes: usize) -> Result<Promoted, Error> {
    let schedule = q.schedule()?;
    if max == 0 {
        return Ok(Promoted {
            promoted: 0,
            dropped: 0,
        });
    }
    let now = q.ctx.now_ms() as f64;
    let mut books = Books::new(q, "due job(s)");
    let mut jobs: Vec<(RStr, Due)> = Vec::new();
    let mut failed = None;
    schedule.zset_walk(now, |job, _| {
        match due_place(q, &mut books, &job) {
            Ok(Some(due)) => jobs.push((job, due)),
            Ok(None) => {}
            Err(e) => failed = Some(e),
        }
        failed.is_none() && jobs.len() < max && books.kept() < passes
    });
    if let Some(e) = failed {
        return Err(e);
    }
    if jobs.is_empty() {
        // Nothing to write: the books report what they kept.
        books.write()?;
        return Ok(Promoted {
            promoted: 0,
            dropped: 0,
        });
    }
    let flat = match jobs
        .iter()
        .any(|(_, d)| matches!(d, Due::Back { book: None, .. }))
    {
        true => Some(q.flat()?),
        false => None,
    };
    // ---- write ----
    let ids: Vec<Arg> = jobs.iter().map(|(j, _)| j.as_arg()).collect();
    q.zrem(schedule, &ids, c"zrem");
    let mut flat_back: Vec<Arg> = Vec::new();
    let (mut promoted, mut dropped) = (0, 0);
    for (job, due) in &jobs {
        match due {
            Due::Dropped => dropped += 1,
            Due::Back { row, book } => {
                promoted += 1;
                q.hset(*row, &[(word(Word::State), word(Word::Pending))], c"hset");
                match book {
                    Some(b) => books.add(*b, job.clone()),
                    None => flat_back.push(job.as_arg()),
                }
            }
        }
    }
    if let Some(flat) = flat {
        q.zadd(flat, Score::zero(), &flat_back);
        q.wake_flat_waiters();
    }
    books.write()?;
    if dropped > 0 {
        q.call.count(&stats::ENTRIES_DROPPED, dropped as u64);
        q.report(|| format!("{dropped} schedule entr(ies) dropped: no row, or a row not scheduled"));
    }
    Ok(Promoted { promoted, dropped })
}

/// Where the due `job` goes, read from its row; `None` when it stays due
/// (its lane damaged).
fn due_place<'q>(q: &Queue<'q>, books: &mut Books<'q>, job: &RStr) -> Result<Option<Due<'q>>, Error> {
    let row = q.row_place(job.bytes())?;
    if !row.exists || row.state() != Some(State::Scheduled) {
        return Ok(Some(Due::Dropped));
    }
    let Some(book) = books.home(row.lane())? else {
        return Ok(None);
    };
    Ok(Some(Due::Back { row: row.key, book }))
}
