//! Every queue's figures on this server (SPEC section 8), in memory: per
//! lane and for the queue as a whole, the leases the module granted and the
//! turns they came in (a lease's worker time runs from its turn's previous
//! end), within bounds — at most `lanes` lanes tracked (the lane idle
//! longest dropped first) and ten times as many leases (the oldest turns'
//! dropped first: their jobs then end uncounted).

use std::hash::{BuildHasher, Hasher};

use rustc_hash::{FxBuildHasher, FxHashMap as HashMap};

use crate::model::schedule::Clamp;

use super::brand::mint_ms;
use super::tally::{Clock, Figures, Tally};

/// Leases kept per lane of the bound.
pub const LEASES_PER_LANE: usize = 10;
/// The bound leases are kept within is of at least this many lanes' (the
/// turns under fairness by time need them with no lane tracked).
pub const LEASE_FLOOR: usize = 10_000;

/// What a turn keeps: figures of at most `lanes` lanes (`emq.stats-lanes`;
/// 0: none), and whether it is under fairness by time (its leases kept all
/// the same).
#[derive(Debug, Clone, Copy)]
pub struct Keep {
    pub lanes: usize,
    pub time: bool,
}

/// A turn's leases: when it claimed them and when the last of them ended
/// (its jobs are worked one after another), and how many are still open.
#[derive(Debug, Clone, Copy)]
struct TurnEnd {
    claimed_ms: i64,
    last_end_ms: i64,
    open: u32,
}

/// One queue's figures.
#[derive(Debug, Default)]
pub struct QueueFigures {
    /// Its database and prefix (what its key in the store was hashed from).
    db: i32,
    prefix: Box<[u8]>,
    lanes: HashMap<Box<[u8]>, Tally>,
    /// A job's id hashed ([`job_key`]) → its turn in `turns`: no id is
    /// copied on a claim's path.
    leases: HashMap<u64, u32>,
    turns: Vec<TurnEnd>,
    free: Vec<u32>,
    /// Some of its leases came of turns under fairness by time: they are
    /// kept with no lane tracked (`emq.stats-lanes 0`).
    time: bool,
}

impl QueueFigures {
    pub fn lane(&self, lane: &[u8]) -> Option<&Tally> {
        self.lanes.get(lane)
    }

    pub fn lanes(&self) -> impl Iterator<Item = (&[u8], &Tally)> {
        self.lanes.iter().map(|(k, v)| (&**k, v))
    }

    /// The whole queue's figures — over the window, and since load — summed
    /// from its lanes when asked (not on a claim's path); the waits too when
    /// `waits`.
    pub fn sum(&self, clock: Clock, waits: bool) -> (Figures, Figures) {
        let (mut window, mut total) = (Figures::default(), Figures::default());
        for t in self.lanes.values() {
            t.add_window(clock, &mut window, waits);
            match waits {
                true => total.merge(&t.total),
                false => total.merge_counts(&t.total),
            }
        }
        (window, total)
    }

    fn new_turn(&mut self, claimed_ms: i64, open: u32) -> u32 {
        let turn = TurnEnd {
            claimed_ms,
            last_end_ms: claimed_ms,
            open,
        };
        match self.free.pop() {
            Some(i) => {
                self.turns[i as usize] = turn;
                i
            }
            None => {
                self.turns.push(turn);
                (self.turns.len() - 1) as u32
            }
        }
    }

    /// One of turn `i`'s leases is gone.
    fn close(&mut self, i: u32) {
        let t = &mut self.turns[i as usize];
        t.open = t.open.saturating_sub(1);
        if t.open == 0 {
            self.free.push(i);
        }
    }

    fn heap_bytes(&self) -> usize {
        let entry = |k: usize, v: usize| k + v + 1;
        self.lanes.capacity() * entry(std::mem::size_of::<Box<[u8]>>(), std::mem::size_of::<Tally>())
            + self
                .lanes
                .iter()
                .map(|(k, t)| k.len() + t.heap_bytes())
                .sum::<usize>()
            + self.leases.capacity() * entry(8, 4)
            + self.turns.capacity() * std::mem::size_of::<TurnEnd>()
            + self.free.capacity() * 4
    }
}

/// The key of a job's lease: its id hashed to 64 bits. Two ids of one
/// queue that hash alike (about one chance in 2^64 a pair) would share a
/// lease: a figure off, never the keyspace.
fn job_key(job: &[u8]) -> u64 {
    let mut h = FxBuildHasher.build_hasher();
    h.write(job);
    h.write_usize(job.len());
    h.finish()
}

/// A job a turn served: its id, and whether this was its first claim (its
/// attempts now 1: only then does it count a wait).
#[derive(Debug, Clone, Copy)]
pub struct Served<'a> {
    pub job: &'a [u8],
    pub first: bool,
}

/// The key of a queue in the store: its database and prefix hashed, so that
/// a claim finds its queue with one hash of the prefix.
fn queue_key(db: i32, prefix: &[u8]) -> u64 {
    let mut h = FxBuildHasher.build_hasher();
    h.write_i32(db);
    h.write(prefix);
    h.finish()
}

#[derive(Debug, Default)]
pub struct Store {
    /// By [`queue_key`]; a queue whose key another holds (one chance in 2^64
    /// a pair) takes its place, and the other's figures start again.
    queues: HashMap<u64, QueueFigures>,
    lanes: usize,
    leases: usize,
}

impl Store {
    pub fn queue(&self, db: i32, prefix: &[u8]) -> Option<&QueueFigures> {
        self.queues
            .get(&queue_key(db, prefix))
            .filter(|q| q.db == db && *q.prefix == *prefix)
    }

    /// Records into the lane's tally, made when missing (one lookup when
    /// it is there).
    fn record(q: &mut QueueFigures, lanes: &mut usize, lane: &[u8], f: impl FnOnce(&mut Tally)) {
        match q.lanes.get_mut(lane) {
            Some(t) => f(t),
            None => {
                let mut t = Tally::default();
                f(&mut t);
                q.lanes.insert(lane.into(), t);
                *lanes += 1;
            }
        }
    }

    /// A claim turn on `lane` of queue (`db`, `prefix`), decided by `clamp`,
    /// that leased `served` (none: a turn at its ceiling or throttled).
    /// `keep`: `emq.stats-lanes` (0 records no figures), and whether the
    /// turn is under fairness by time (its leases are kept all the same:
    /// their ends correct its charge).
    pub fn turn(
        &mut self,
        at: (i32, &[u8]),
        lane: &[u8],
        clock: Clock,
        clamp: Clamp,
        served: &[Served],
        keep: Keep,
    ) {
        if keep.lanes == 0 && !keep.time {
            return self.keep_within(0);
        }
        let q = Self::queue_mut(&mut self.queues, (&mut self.lanes, &mut self.leases), at);
        if !served.is_empty() {
            let turn = q.new_turn(clock.now_ms, served.len() as u32);
            for s in served {
                match q.leases.insert(job_key(s.job), turn) {
                    Some(old) => q.close(old),
                    None => self.leases += 1,
                }
            }
            q.time |= keep.time;
        }
        if keep.lanes == 0 {
            return self.bound(0);
        }
        let jobs = served.len() as u64;
        let waits = served
            .iter()
            .filter(|s| s.first)
            .filter_map(|s| mint_ms(s.job))
            // A mint time to come (another machine's clock ahead) is no wait.
            .filter(|minted| *minted <= clock.now_ms)
            .map(|minted| (clock.now_ms - minted) as u64);
        Self::record(q, &mut self.lanes, lane, |t| {
            t.turn(clock, clamp, jobs);
            for wait in waits {
                t.wait(clock, wait);
            }
        });
        self.bound(keep.lanes);
    }

    /// The queue's figures, made when missing (one lookup when there).
    fn queue_mut<'s>(
        queues: &'s mut HashMap<u64, QueueFigures>,
        counts: (&mut usize, &mut usize),
        at: (i32, &[u8]),
    ) -> &'s mut QueueFigures {
        let q = queues.entry(queue_key(at.0, at.1)).or_default();
        if q.db != at.0 || *q.prefix != *at.1 {
            // New, or another queue's (a hash shared): starts afresh.
            *counts.0 -= q.lanes.len();
            *counts.1 -= q.leases.len();
            *q = QueueFigures {
                db: at.0,
                prefix: at.1.into(),
                ..QueueFigures::default()
            };
        }
        q
    }

    /// The lease of `job` (of `lane`) ended at `end_ms`: if the module
    /// granted it, the worker time its job used — from its turn's claim for
    /// the first of the turn's jobs to end, else from the previous end — is
    /// added to the lane's busy time and returned. `cap` as for [`Store::turn`].
    pub fn lease_ended(
        &mut self,
        at: (i32, &[u8]),
        lane: &[u8],
        job: &[u8],
        (end_ms, clock): (i64, Clock),
        cap: usize,
    ) -> Option<u64> {
        let q = self
            .queues
            .get_mut(&queue_key(at.0, at.1))
            .filter(|q| q.db == at.0 && *q.prefix == *at.1)?;
        let i = q.leases.remove(&job_key(job))?;
        self.leases -= 1;
        let t = &mut q.turns[i as usize];
        let from = t.last_end_ms.max(t.claimed_ms);
        let used = end_ms.saturating_sub(from).max(0) as u64;
        t.last_end_ms = t.last_end_ms.max(end_ms);
        q.close(i);
        if cap > 0 {
            Self::record(q, &mut self.lanes, lane, |t| t.ended(clock, used));
        }
        self.bound(cap);
        Some(used)
    }

    /// Forgets the queue's figures (its leases in flight stay: their jobs'
    /// time is still to be counted).
    pub fn reset(&mut self, db: i32, prefix: &[u8]) {
        let key = queue_key(db, prefix);
        if let Some(q) = self
            .queues
            .get_mut(&key)
            .filter(|q| q.db == db && *q.prefix == *prefix)
        {
            self.lanes -= q.lanes.len();
            q.lanes = HashMap::default();
        }
    }

    /// Forgets the queues whose prefix `gone` names, leases and all (their
    /// keys left this server: a slot migrated away).
    pub fn forget(&mut self, gone: impl Fn(&[u8]) -> bool) {
        let (lanes, leases) = (&mut self.lanes, &mut self.leases);
        self.queues.retain(|_, q| {
            let keep = !gone(&q.prefix);
            if !keep {
                *lanes -= q.lanes.len();
                *leases -= q.leases.len();
            }
            keep
        });
    }

    /// Forgets everything (`emq.stats-lanes 0`).
    pub fn clear(&mut self) {
        if self.lanes > 0 || self.leases > 0 || !self.queues.is_empty() {
            *self = Store::default();
        }
    }

    pub fn lanes_tracked(&self) -> usize {
        self.lanes
    }

    pub fn leases_tracked(&self) -> usize {
        self.leases
    }

    /// The bytes the figures hold (the maps' and vectors' room, keys and
    /// histograms; the allocator's rounding aside).
    pub fn bytes(&self) -> usize {
        std::mem::size_of::<Store>()
            + self
                .queues
                .values()
                .map(|q| std::mem::size_of::<(u64, QueueFigures)>() + 1 + q.prefix.len() + q.heap_bytes())
                .sum::<usize>()
    }
}

mod bound;

#[cfg(test)]
mod tests;
