//! The lanes one command puts jobs back into (returned leases, due jobs,
//! revived jobs, a job that left its lease): each lane read once, when first
//! met, then followed job by job, so that a lane joins the ring at the job
//! that makes it serviceable — the order EchoMQ's scripts meet them in
//! (REAP and PROMOTE: earliest deadline or due time first).
//!
//! A lane whose own state is damaged (a ceiling or count that is not an
//! integer, a negative count) fails a client's command ([`OnDamage::Fail`]);
//! the module's own work ([`OnDamage::Lenient`]: a claim's returns, the
//! timer's) puts its jobs back all the same, lowers its count only if the
//! count is a number, and leaves its ring to EMQ.REPAIR. A lane whose pending
//! key holds another type cannot take jobs back at all.

use crate::ffi::{Arg, Key, RStr};
use crate::model::error::{quote, Error};
use crate::model::schedule::Lane;

use crate::queue::{Queue, Score};

/// What a damaged lane does to the command that meets it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OnDamage {
    /// An error; nothing changes (the commands a client asks for).
    Fail,
    /// Its jobs go back; what its damaged numbers decide is left as it is.
    Lenient,
}

struct Book<'q> {
    lane: RStr,
    /// `None`: its pending key holds another type.
    pending: Option<Key<'q>>,
    /// Its state, when sound (else its ring is left as it is).
    now: Option<Lane>,
    /// Its count, when a number >= 0 (else left as it is).
    active: Option<i64>,
    count_changed: bool,
    ringed: bool,
    jobs: Vec<RStr>,
}

pub struct Books<'q> {
    q: &'q Queue<'q>,
    on_damage: OnDamage,
    books: Vec<Book<'q>>,
    /// Book indices, in the order their lanes join the ring.
    joins: Vec<usize>,
}

impl<'q> Books<'q> {
    pub fn new(q: &'q Queue<'q>, on_damage: OnDamage) -> Books<'q> {
        Books {
            q,
            on_damage,
            books: Vec::new(),
            joins: Vec::new(),
        }
    }

    /// The book of `lane`, read the first time it is met.
    pub fn open(&mut self, lane: &[u8]) -> Result<usize, Error> {
        if let Some(i) = self.books.iter().position(|b| b.lane.bytes() == lane) {
            return Ok(i);
        }
        let q = self.q;
        if self.books.is_empty() {
            // A lane taking jobs back may join the ring: its keys are
            // checked before the command's first write.
            q.joinable()?;
        }
        let name = q.ctx.string(lane);
        let read = q.lane_read(name.as_arg());
        // `P paused` of another type is the queue's damage, not the lane's.
        read.paused.clone()?;
        let book = match read.lane_or_damage()? {
            Ok(l) if l.active >= 0 => Book {
                pending: Some(q.pending_zset(lane)?),
                now: Some(l),
                active: Some(l.active),
                count_changed: false,
                ringed: l.serviceable(),
                jobs: Vec::new(),
                lane: name,
            },
            Ok(_) if self.on_damage == OnDamage::Fail => {
                return Err(Error::bad_stored(
                    "active count of lane",
                    lane,
                    q.active()?.name().bytes(),
                    "an integer >= 0",
                ))
            }
            Err(e) if self.on_damage == OnDamage::Fail => return Err(e),
            _ => {
                let pending = match q.pending_zset(lane) {
                    Err(e @ Error::NoPermission { .. }) => return Err(e),
                    read => read.ok(),
                };
                let active = read.active.clone().ok().filter(|a| *a >= 0);
                q.report(|| {
                    format!(
                        "lane '{}': its jobs go back, its bookkeeping is left for EMQ.REPAIR: {}",
                        quote(lane),
                        read.lane()
                            .err()
                            .and_then(|e| e.message())
                            .unwrap_or_else(|| "its active count is negative".into())
                    )
                });
                Book {
                    pending,
                    now: None,
                    active,
                    count_changed: false,
                    ringed: false,
                    jobs: Vec::new(),
                    lane: name,
                }
            }
        };
        self.books.push(book);
        Ok(self.books.len() - 1)
    }

    /// Whether the lane can take jobs back (its pending key is a zset).
    pub fn reachable(&self, i: usize) -> bool {
        self.books[i].pending.is_some()
    }

    /// One of the lane's leases ended: its count drops by one.
    pub fn lease_ended(&mut self, i: usize) {
        let b = &mut self.books[i];
        if let Some(a) = b.active.as_mut() {
            *a -= 1;
            b.count_changed = true;
        }
        if let Some(l) = b.now.as_mut() {
            l.active -= 1;
        }
        self.follow(i);
    }

    /// `job` goes back to the lane (score 0).
    pub fn add(&mut self, i: usize, job: RStr) {
        let b = &mut self.books[i];
        b.jobs.push(job);
        if let Some(l) = b.now.as_mut() {
            l.depth += 1;
        }
        self.follow(i);
    }

    /// The lane joins the ring at the change that makes it serviceable.
    fn follow(&mut self, i: usize) {
        let b = &mut self.books[i];
        if let Some(l) = b.now {
            if !b.ringed && l.serviceable() {
                b.ringed = true;
                self.joins.push(i);
            }
        }
    }

    /// The writes: each lane's jobs (`ZADD P g:<lane>:pending 0 …`), each
    /// changed count, then the ring joins in order, each with its wake.
    pub fn write(self) -> Result<(), Error> {
        let q = self.q;
        for b in &self.books {
            if let (Some(pending), false) = (b.pending, b.jobs.is_empty()) {
                let jobs: Vec<Arg> = b.jobs.iter().map(RStr::as_arg).collect();
                q.zadd(pending, Score::zero(), &jobs);
            }
        }
        if self.books.iter().any(|b| b.count_changed) {
            let active = q.active()?;
            for b in self.books.iter().filter(|b| b.count_changed) {
                if let Some(a) = b.active {
                    q.set_count(active, b.lane.as_arg(), a);
                }
            }
        }
        let joins: Vec<Arg> = self.joins.iter().map(|&i| self.books[i].lane.as_arg()).collect();
        q.ring_join(&joins)
    }
}
