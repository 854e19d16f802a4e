//! Expired leases going back (EMQ.REAP in its three kinds, a claim's
//! expired-first returns, the timer's): each leaves `P active`, its lane's
//! count drops, and it goes back to its lane at score 0 (or, with no lane,
//! to `P pending`) with `state pending` — or, when its stalls are counted and
//! reach the threshold, it dies (`state dead`, `last_error stalled`, into
//! `P dead`). A lease whose row is missing or not `active` is only removed
//! from `P active` (a script would write a ghost row for it); one whose
//! lane's state is damaged stays there until the lane is mended, and the
//! sweep goes on past it (`books.rs`, bounded by [`Sweep::passes`]).

use crate::ffi::{word, Arg, Key, RStr, Word};
use crate::model::credit::Stamped;
use crate::model::error::Error;
use crate::model::layout::field;
use crate::model::row::{return_fate, ReturnFate, Stalls, State};
use crate::queue::{Queue, Score};
use crate::runtime::stats;

use super::books::Books;

/// What a damaged `max-stalled` in `P meta` does to the command that meets
/// it ([`max_stalled`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDamage {
    /// An error; nothing changes (the commands a client asks for).
    Fail,
    /// Ignored, and logged (the module's own work: a claim's returns, the
    /// timer's).
    Lenient,
}

/// Which expired leases a return takes.
#[derive(Debug, Clone, Copy)]
pub struct Sweep<'a> {
    /// At most this many expired leases are looked at, earliest first
    /// (`REAP … GROUP`: the script's window); `usize::MAX`: as far as
    /// [`Sweep::max`] and [`Sweep::passes`] go.
    pub look: usize,
    /// At most this many are ended.
    pub max: usize,
    /// At most this many are passed over for their lane's damage (left in
    /// `P active`): the bound on a call's work past `max`.
    pub passes: usize,
    /// Only the leases whose row names this lane (`REAP … GROUP lane`).
    pub group: Option<&'a [u8]>,
    pub stalls: Stalls,
}

/// Entries a client's sweep (EMQ.REAP, EMQ.PROMOTE) or the timer passes over
/// at most in one call for their lane's damage (docs/damage.md, "Sweeps").
pub const PASSES: usize = 10_000;

/// What a return did.
#[derive(Default)]
pub struct Returned {
    pub back: Vec<RStr>,
    pub dead: Vec<RStr>,
    /// Leases removed whose row was missing or not leased.
    pub dropped: Vec<RStr>,
}

impl Returned {
    pub fn ended(&self) -> usize {
        self.back.len() + self.dead.len() + self.dropped.len()
    }
}

/// A lease's end, decided from its row.
enum End<'q> {
    Dropped,
    /// Back to its lane (`Some(book)`) or to `P pending`; the row's new
    /// `stalled` when counted.
    Back {
        row: Key<'q>,
        book: Option<usize>,
        stalled: Option<i64>,
        stamp: Stamped,
    },
    Dies {
        row: Key<'q>,
        book: Option<usize>,
        stalled: i64,
        stamp: Stamped,
    },
}

/// The stall policy stored in `P meta` (`max-stalled`), if any. A damaged
/// value fails a client's command and is ignored by the module's own
/// returns (no job dies of them until it is mended).
pub fn max_stalled(q: &Queue, on_damage: OnDamage) -> Result<Option<i64>, Error> {
    let Some(meta) = q.optional(crate::model::layout::Fixed::Meta, crate::ffi::Kind::Hash)? else {
        return Ok(None);
    };
    match meta.hash_get(word(Word::MaxStalled)) {
        None => Ok(None),
        Some(v) => match crate::model::grammar::parse_i64(v.bytes()) {
            Some(n) if n >= 1 => Ok(Some(n)),
            _ if on_damage == OnDamage::Lenient => {
                q.report(|| "no job dies of its stalls until P meta's max-stalled is mended".to_string());
                Ok(None)
            }
            _ => Err(Error::bad_stored(
                "setting",
                field::MAX_STALLED,
                meta.name().bytes(),
                "an integer >= 1",
            )),
        },
    }
}

/// Ends the expired leases `sweep` takes; reads and checks everything first,
/// then writes.
pub fn return_expired(q: &Queue, sweep: Sweep) -> Result<Returned, Error> {
    let leases = q.leases()?;
    if sweep.max == 0 {
        return Ok(Returned::default());
    }
    let now = q.ctx.now_ms() as f64;
    // ---- read ----
    let mut books = Books::new(q, "expired lease(s)");
    // Each lease with its deadline (where its job's time ends).
    let mut ends: Vec<(RStr, i64, End)> = Vec::new();
    let mut failed = None;
    let mut looked = 0usize;
    leases.zset_walk(now, |job, deadline| {
        looked += 1;
        match lease_end(q, &mut books, &job, sweep) {
            Ok(Some(end)) => ends.push((job, deadline as i64, end)),
            Ok(None) => {}
            Err(e) => failed = Some(e),
        }
        failed.is_none() && looked < sweep.look && ends.len() < sweep.max && books.kept() < sweep.passes
    });
    if let Some(e) = failed {
        return Err(e);
    }
    if ends.is_empty() {
        // Nothing to write: the books report what they kept.
        books.write()?;
        return Ok(Returned::default());
    }
    let flat = if ends
        .iter()
        .any(|(_, _, e)| matches!(e, End::Back { book: None, .. }))
    {
        Some(q.flat()?)
    } else {
        None
    };
    let deaths = ends
        .iter()
        .filter(|(_, _, e)| matches!(e, End::Dies { .. }))
        .count();
    // Fairness by time corrects the lanes' charges: its keys are checked now.
    let correcting = ends.iter().any(|(_, _, e)| match e {
        End::Back {
            stamp, book: Some(_), ..
        }
        | End::Dies {
            stamp, book: Some(_), ..
        } => matches!(stamp, Some(Ok(_))),
        _ => false,
    });
    super::fairness::check(q, correcting)?;
    let graves = if deaths > 0 {
        Some((q.dead()?, super::counts::failed_count(q, deaths as i64)?))
    } else {
        None
    };

    // ---- write ----
    let ended: Vec<Arg> = ends.iter().map(|(j, _, _)| j.as_arg()).collect();
    q.zrem(leases, &ended, c"zrem");
    let mut out = Returned::default();
    let mut flat_back: Vec<Arg> = Vec::new();
    let mut buried: Vec<Arg> = Vec::new();
    for (job, deadline, end) in &ends {
        match end {
            End::Dropped => {}
            End::Back {
                row,
                book,
                stalled,
                stamp,
            } => {
                write_row(q, *row, State::Pending, *stalled, None);
                match book {
                    Some(b) => {
                        books.lease_ended(*b, job.bytes(), *deadline, *row, *stamp);
                        books.add(*b, job.clone());
                    }
                    None => flat_back.push(job.as_arg()),
                }
            }
            End::Dies {
                row,
                book,
                stalled,
                stamp,
            } => {
                write_row(q, *row, State::Dead, Some(*stalled), Some(word(Word::Stalled)));
                if let Some(b) = book {
                    books.lease_ended(*b, job.bytes(), *deadline, *row, *stamp);
                }
                buried.push(job.as_arg());
            }
        }
    }
    if let Some(flat) = flat {
        q.zadd(flat, Score::zero(), &flat_back);
        q.wake_flat_waiters();
    }
    if let Some((dead, failed)) = graves {
        q.zadd(dead, Score::zero(), &buried);
        failed.add(q);
        q.call.count(&stats::JOBS_DIED, buried.len() as u64);
        q.call.count(&stats::DEAD_OF_STALLS, buried.len() as u64);
    }
    books.write()?;
    for (job, _, end) in ends {
        match end {
            End::Dropped => out.dropped.push(job),
            End::Back { .. } => out.back.push(job),
            End::Dies { .. } => out.dead.push(job),
        }
    }
    if !out.dropped.is_empty() {
        q.call.count(&stats::ENTRIES_DROPPED, out.dropped.len() as u64);
        let first = crate::model::error::quote(out.dropped[0].bytes());
        let n = out.dropped.len();
        q.report(|| format!("{n} lease(s) dropped: no row, or a row not leased (job '{first}' first)"));
    }
    Ok(out)
}

/// How the expired lease of `job` ends, read from its row; `None` when it
/// stays in `P active` (another lane's under `GROUP`, or its lane damaged).
fn lease_end<'q>(
    q: &Queue<'q>,
    books: &mut Books<'q>,
    job: &RStr,
    sweep: Sweep,
) -> Result<Option<End<'q>>, Error> {
    let row = q.row_ending(job.bytes())?;
    if sweep.group.is_some() && row.lane() != sweep.group {
        return Ok(None);
    }
    if !row.exists || row.state() != Some(State::Active) {
        return Ok(Some(End::Dropped));
    }
    let Some(book) = books.home(row.lane())? else {
        return Ok(None);
    };
    let stalled_now = if sweep.stalls.count {
        row.key.hash_get(word(Word::Stalled))
    } else {
        None
    };
    Ok(Some(
        match return_fate(stalled_now.as_ref().map(RStr::bytes), sweep.stalls) {
            ReturnFate::Back { stalled } => End::Back {
                row: row.key,
                book,
                stalled,
                stamp: row.stamp,
            },
            ReturnFate::Dies { stalled } => End::Dies {
                row: row.key,
                book,
                stalled,
                stamp: row.stamp,
            },
        },
    ))
}

/// The row of a returned job: its state, its new stall count when counted,
/// and for a death its `last_error`.
fn write_row(q: &Queue, row: Key, state: State, stalled: Option<i64>, error: Option<Arg>) {
    let state_word = word(match state {
        State::Pending => Word::Pending,
        State::Active => Word::Active,
        State::Scheduled => Word::Scheduled,
        State::Dead => Word::Dead,
    });
    let count = stalled.map(|n| q.ctx.string_from_i64(n));
    let mut pairs: smallvec::SmallVec<[(Arg, Arg); 3]> = smallvec::smallvec![(word(Word::State), state_word)];
    if let Some(error) = error {
        pairs.push((word(Word::LastError), error));
    }
    if let Some(n) = &count {
        pairs.push((word(Word::Stalled), n.as_arg()));
    }
    q.hset(row, &pairs, c"hset");
}
