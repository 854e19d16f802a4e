//! The lanes one command puts jobs back into (returned leases, due jobs,
//! revived jobs): each lane read once, when first met, then followed job by
//! job, so that a lane joins the ring at the job that makes it serviceable —
//! the order EchoMQ's scripts meet them in (REAP and PROMOTE: earliest
//! deadline or due time first).
//!
//! A lane whose own state is damaged (its pending key of another type, a
//! ceiling or count that is not an integer, a negative count) takes nothing
//! back: its entries stay where they are (in `P active`, `P schedule`,
//! `P dead`) until it is mended, the sweep goes on with the others, and the
//! damage is logged and counted (docs/damage.md, "Sweeps") — as a claim
//! skips a damaged head lane. A key the caller may not touch, or damage to a
//! queue-wide key, is the command's error.

use crate::ffi::{Arg, Key, RStr};
use crate::model::credit::Stamped;
use crate::model::error::{quote, Error};
use crate::model::schedule::Lane;
use crate::runtime::stats;

use crate::queue::{Queue, Score};

struct Book<'q> {
    lane: RStr,
    pending: Key<'q>,
    now: Lane,
    count_changed: bool,
    ringed: bool,
    jobs: Vec<RStr>,
}

pub struct Books<'q> {
    q: &'q Queue<'q>,
    /// What the entries are (`expired lease(s)`, …), for the log.
    what: &'static str,
    books: Vec<Book<'q>>,
    /// Book indices, in the order their lanes join the ring.
    joins: Vec<usize>,
    /// The damaged lanes met, each with what is wrong.
    damaged: Vec<(RStr, String)>,
    /// Entries left in place for their lane's damage.
    kept: usize,
}

impl<'q> Books<'q> {
    /// The books of a sweep of `what` (`expired lease(s)`, `due job(s)`,
    /// `dead job(s)`).
    pub fn new(q: &'q Queue<'q>, what: &'static str) -> Books<'q> {
        Books {
            q,
            what,
            books: Vec::new(),
            joins: Vec::new(),
            damaged: Vec::new(),
            kept: 0,
        }
    }

    /// The book of `lane`, read the first time it is met; `None` when the
    /// lane's state is damaged: the entry that asked stays where it is (and
    /// is counted as kept).
    pub fn open(&mut self, lane: &[u8]) -> Result<Option<usize>, Error> {
        if let Some(i) = self.books.iter().position(|b| b.lane.bytes() == lane) {
            return Ok(Some(i));
        }
        if self.damaged.iter().any(|(l, _)| l.bytes() == lane) {
            self.kept += 1;
            return Ok(None);
        }
        let q = self.q;
        if self.books.is_empty() {
            // A lane taking jobs back may join the ring, and its count
            // change: those keys are checked before the command's first
            // write, and one of another type is the queue's damage, not the
            // lane's.
            q.joinable()?;
            q.active()?;
            q.limits()?;
        }
        let name = q.ctx.string(lane);
        let read = q.lane_read(name.as_arg());
        // `P paused` or `P gnext` of another type is the queue's damage,
        // not the lane's.
        read.paused.clone()?;
        read.throttled.clone()?;
        let damage = match read.lane_or_damage()? {
            Ok(l) if l.active >= 0 => {
                self.books.push(Book {
                    pending: q.pending_zset(lane)?,
                    now: l,
                    count_changed: false,
                    ringed: l.serviceable(),
                    jobs: Vec::new(),
                    lane: name,
                });
                return Ok(Some(self.books.len() - 1));
            }
            Ok(_) => "its active count is negative".to_string(),
            Err(e) => e.message().unwrap_or_default(),
        };
        self.damaged.push((name, damage));
        self.kept += 1;
        Ok(None)
    }

    /// Where an entry whose row names `lane` goes back: `Some(Some(book))`
    /// into its lane, `Some(None)` with no lane (the flat queue), `None` when
    /// its lane's damage keeps it where it is.
    pub fn home(&mut self, lane: Option<&[u8]>) -> Result<Option<Option<usize>>, Error> {
        match lane {
            None => Ok(Some(None)),
            Some(lane) => Ok(self.open(lane)?.map(Some)),
        }
    }

    /// Counts and logs the entries left in place for their lane's damage
    /// (once the sweep can no longer fail: from [`Books::write`]).
    fn report_kept(&self) {
        let Some((lane, damage)) = self.damaged.first() else {
            return;
        };
        let what = self.what;
        self.q.call.count(&stats::ENTRIES_KEPT, self.kept as u64);
        let (n, lanes) = (self.kept, self.damaged.len());
        self.q.report(|| {
            format!(
                "{n} {what} of {lanes} damaged lane(s) stay where they are until mended \
                 (lane '{}' first: {damage})",
                quote(lane.bytes())
            )
        });
    }

    /// How many entries were left in place so far.
    pub fn kept(&self) -> usize {
        self.kept
    }

    /// The lease of `job`, one of the lane's, ended (expired at
    /// `deadline`): its count drops by one, the figures count the time its
    /// job used, and under fairness by time that time corrects the lane's
    /// charge (the row, kept, loses its stamp).
    pub fn lease_ended(&mut self, i: usize, job: &[u8], deadline: i64, row: Key<'q>, stamp: Stamped) {
        let lane = self.books[i].lane.bytes();
        let used = super::figures::lease_ended(self.q, lane, job, deadline);
        super::fairness::lease_ended(self.q, lane, Some(row), stamp, deadline, used);
        let b = &mut self.books[i];
        b.now.active -= 1;
        b.count_changed = true;
        self.follow(i);
    }

    /// `job` goes back to the lane (score 0).
    pub fn add(&mut self, i: usize, job: RStr) {
        let b = &mut self.books[i];
        b.jobs.push(job);
        b.now.depth += 1;
        self.follow(i);
    }

    /// The lane joins the ring at the change that makes it serviceable.
    fn follow(&mut self, i: usize) {
        let b = &mut self.books[i];
        if !b.ringed && b.now.serviceable() {
            b.ringed = true;
            self.joins.push(i);
        }
    }

    /// The writes: each lane's jobs (`ZADD P g:<lane>:pending 0 …`), each
    /// changed count, then the ring joins in order, each with its wake; and
    /// the entries kept for their lane's damage, counted and logged. A sweep
    /// calls it last, after its own checks, also when it writes nothing.
    pub fn write(self) -> Result<(), Error> {
        self.report_kept();
        let q = self.q;
        for b in self.books.iter().filter(|b| !b.jobs.is_empty()) {
            let jobs: Vec<Arg> = b.jobs.iter().map(RStr::as_arg).collect();
            q.zadd(b.pending, Score::zero(), &jobs);
        }
        if self.books.iter().any(|b| b.count_changed) {
            let active = q.active()?;
            for b in self.books.iter().filter(|b| b.count_changed) {
                q.set_count(active, b.lane.as_arg(), b.now.active);
            }
        }
        let joins: Vec<Arg> = self.joins.iter().map(|&i| self.books[i].lane.as_arg()).collect();
        q.ring_join(&joins)
    }
}
