//! Due jobs back to waiting (EMQ.PROMOTE, and the timer at their due time):
//! each leaves `P schedule` for its lane at score 0 (rung with a wake if that
//! makes it serviceable) or, with no lane, for `P pending`, `state pending`.
//! An entry whose row is missing or not `scheduled` is only removed (a
//! script would write a ghost row for it).

use crate::ffi::{word, Arg, Key, RStr, Word};
use crate::model::error::Error;
use crate::model::row::State;
use crate::queue::{Queue, Score};
use crate::runtime::stats;

use super::books::{Books, OnDamage};

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

/// Promotes the due jobs, earliest first, at most `max`; reads and checks
/// everything first, then writes.
pub fn promote_due(q: &Queue, max: usize, on_damage: OnDamage) -> Result<Promoted, Error> {
    let schedule = q.schedule()?;
    let now = q.ctx.now_ms() as f64;
    let due = schedule.zset_range(now, max);
    let mut books = Books::new(q, on_damage);
    let mut jobs: Vec<(RStr, Due)> = Vec::with_capacity(due.len());
    for (job, _) in due {
        let row = q.row_place(job.bytes())?;
        if !row.exists || row.state() != Some(State::Scheduled) {
            jobs.push((job, Due::Dropped));
            continue;
        }
        let book = match row.lane() {
            Some(lane) => {
                let b = books.open(lane)?;
                // A lane that cannot take it back keeps it due (the timer
                // looks past it).
                if !books.reachable(b) {
                    continue;
                }
                Some(b)
            }
            None => None,
        };
        jobs.push((job, Due::Back { row: row.key, book }));
    }
    if jobs.is_empty() {
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
    }
    books.write()?;
    if dropped > 0 {
        q.call.count(&stats::ENTRIES_DROPPED, dropped as u64);
        q.report(|| format!("{dropped} schedule entr(ies) dropped: no row, or a row not scheduled"));
    }
    Ok(Promoted { promoted, dropped })
}
