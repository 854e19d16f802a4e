//! Expired leases going back (EMQ.REAP in its three kinds, a claim's
//! expired-first returns, the timer's): each leaves `P active`, its lane's
//! count drops, and it goes back to its lane at score 0 (or, with no lane,
//! to `P pending`) with `state pending` — or, when its stalls are counted and
//! reach the threshold, it dies (`state dead`, `last_error stalled`, into
//! `P dead`). A lease whose row is missing or not `active` is only removed
//! from `P active` (a script would write a ghost row for it).

use crate::ffi::{word, Arg, Key, RStr, Word};
use crate::model::error::Error;
use crate::model::layout::field;
use crate::model::row::{return_fate, ReturnFate, Stalls, State};
use crate::queue::{Queue, Score};
use crate::runtime::stats;

use super::books::{Books, OnDamage};

/// Which expired leases a return takes.
#[derive(Debug, Clone, Copy)]
pub struct Sweep<'a> {
    /// At most this many expired leases are looked at, earliest first.
    pub look: usize,
    /// At most this many are ended.
    pub max: usize,
    /// Only the leases whose row names this lane (`REAP … GROUP lane`).
    pub group: Option<&'a [u8]>,
    pub stalls: Stalls,
    pub on_damage: OnDamage,
}

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
    },
    Dies {
        row: Key<'q>,
        book: Option<usize>,
        stalled: i64,
        /// Of its stalls (else set aside: its lane cannot take it back).
        of_stalls: bool,
    },
}

/// The `last_error` of a job set aside because its lane's pending key holds
/// another type.
const UNREACHABLE: &[u8] = b"its lane's pending key is not a sorted set";

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
    let now = q.ctx.now_ms() as f64;
    let expired = leases.zset_range(now, sweep.look);
    if expired.is_empty() {
        return Ok(Returned::default());
    }
    // ---- read ----
    let mut books = Books::new(q, sweep.on_damage);
    let mut ends: Vec<(RStr, End)> = Vec::new();
    let mut dying = false;
    for (job, _) in expired {
        if ends.len() >= sweep.max {
            break;
        }
        let row = q.row_place(job.bytes())?;
        if let Some(target) = sweep.group {
            if row.lane() != Some(target) {
                continue;
            }
        }
        if !row.exists || row.state() != Some(State::Active) {
            ends.push((job, End::Dropped));
            continue;
        }
        let stalled_now = if sweep.stalls.count {
            row.key.hash_get(word(Word::Stalled))
        } else {
            None
        };
        let fate = return_fate(stalled_now.as_ref().map(RStr::bytes), sweep.stalls);
        let book = match row.lane() {
            Some(lane) => Some(books.open(lane)?),
            None => None,
        };
        // A lane that cannot take its job back sets it aside as dead
        // (EMQ.REVIVE once the lane is mended).
        let unreachable = book.is_some_and(|b| !books.reachable(b));
        let end = match fate {
            ReturnFate::Back { stalled } if !unreachable => End::Back {
                row: row.key,
                book,
                stalled,
            },
            ReturnFate::Back { stalled } => End::Dies {
                row: row.key,
                book,
                stalled: stalled.unwrap_or(0),
                of_stalls: false,
            },
            ReturnFate::Dies { stalled } => End::Dies {
                row: row.key,
                book,
                stalled,
                of_stalls: true,
            },
        };
        dying |= matches!(end, End::Dies { .. });
        ends.push((job, end));
    }
    if ends.is_empty() {
        return Ok(Returned::default());
    }
    let flat = if ends
        .iter()
        .any(|(_, e)| matches!(e, End::Back { book: None, .. }))
    {
        Some(q.flat()?)
    } else {
        None
    };
    let graves = if dying {
        let deaths = ends.iter().filter(|(_, e)| matches!(e, End::Dies { .. })).count();
        Some((q.dead()?, super::counts::failed_count(q, deaths as i64)?))
    } else {
        None
    };

    // ---- write ----
    let ended: Vec<Arg> = ends.iter().map(|(j, _)| j.as_arg()).collect();
    q.zrem(leases, &ended, c"zrem");
    let mut out = Returned::default();
    let mut flat_back: Vec<Arg> = Vec::new();
    let mut buried: Vec<Arg> = Vec::new();
    let mut unreachable_text: Option<RStr> = None;
    let mut stall_deaths = 0u64;
    for (job, end) in &ends {
        match end {
            End::Dropped => {}
            End::Back { row, book, stalled } => {
                write_row(q, *row, State::Pending, *stalled, None);
                match book {
                    Some(b) => {
                        books.lease_ended(*b);
                        books.add(*b, job.clone());
                    }
                    None => flat_back.push(job.as_arg()),
                }
            }
            End::Dies {
                row,
                book,
                stalled,
                of_stalls,
            } => {
                let counted = sweep.stalls.count.then_some(*stalled);
                let error = if *of_stalls {
                    word(Word::Stalled)
                } else {
                    unreachable_text
                        .get_or_insert_with(|| q.ctx.string(UNREACHABLE))
                        .as_arg()
                };
                write_row(q, *row, State::Dead, counted, Some(error));
                if let Some(b) = book {
                    books.lease_ended(*b);
                }
                buried.push(job.as_arg());
                stall_deaths += u64::from(*of_stalls);
            }
        }
    }
    if let Some(flat) = flat {
        q.zadd(flat, Score::zero(), &flat_back);
    }
    if let Some((dead, failed)) = graves {
        q.zadd(dead, Score::zero(), &buried);
        failed.add(q);
        q.call.count(&stats::JOBS_DIED, buried.len() as u64);
        q.call.count(&stats::DEAD_OF_STALLS, stall_deaths);
    }
    books.write()?;
    for (job, end) in ends {
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
