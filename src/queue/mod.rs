//! One queue: its keys under the caller's permissions (docs/keyspace.md),
//! and what every command does with them — a lane's state read and checked
//! (`lane.rs`), a job's row (`row.rs`), the ring following a lane and the
//! wake after each push (`ring.rs`), and writes that notify and replicate in
//! the same call (`edit.rs`).

mod edit;
mod lane;
mod ring;
mod row;

use std::rc::Rc;

use crate::ffi::{name_set, Arg, Ctx, Key, KeyName, Kind, NameSet};
use crate::model::credit::Fairness;
use crate::model::error::{quote, Error, FAIRNESS_TEXT};
use crate::model::layout::{self, Fixed};
use crate::runtime::{report, Call};

pub use edit::Score;
pub use lane::stored_int;
pub use row::Row;

pub struct Queue<'q> {
    pub call: &'q Call<'q>,
    pub ctx: &'q Ctx,
    pub prefix: Arg<'q>,
    /// The prefix's bytes (read once).
    pub prefix_bytes: &'q [u8],
    /// The names of the queue's fixed keys, kept between calls.
    names: Rc<NameSet>,
}

impl<'q> Queue<'q> {
    /// The queue under `prefix`: from here on every key the call opens must
    /// pass the caller's key permissions.
    pub fn new(call: &'q Call<'q>, prefix: Arg<'q>) -> Queue<'q> {
        Queue::known(call, prefix, prefix.bytes())
    }

    /// [`Queue::new`], the prefix's bytes already read.
    pub fn known(call: &'q Call<'q>, prefix: Arg<'q>, prefix_bytes: &'q [u8]) -> Queue<'q> {
        call.ctx.guard_keys(prefix_bytes);
        Queue::internal_known(call, prefix, prefix_bytes)
    }

    /// The queue for the module's own work (the timer): no caller, no key
    /// permissions to check.
    pub fn internal(call: &'q Call<'q>, prefix: Arg<'q>) -> Queue<'q> {
        Queue::internal_known(call, prefix, prefix.bytes())
    }

    fn internal_known(call: &'q Call<'q>, prefix: Arg<'q>, prefix_bytes: &'q [u8]) -> Queue<'q> {
        let names = name_set(prefix_bytes, layout::SUFFIXES);
        Queue {
            call,
            ctx: call.ctx,
            prefix,
            prefix_bytes,
            names,
        }
    }

    /// The name of the fixed key `key` (`P` followed by its suffix).
    pub fn name(&self, key: Fixed) -> KeyName<'_> {
        self.names.get(key as usize)
    }

    /// The fixed key `key`, opened and type-checked. Never `P paused`: a set
    /// is reached only by calls, which must not write under a handle.
    pub fn fixed(&self, key: Fixed, kind: Kind) -> Result<Key<'q>, Error> {
        assert!(key != Fixed::Paused, "P paused opened as a key");
        self.ctx.key_by(&self.names, key as usize)?.expect(kind)
    }

    /// The fixed key `key` when it exists (typed; its permission checked
    /// either way); `None`, without opening it, when it does not. For keys a
    /// command most often finds missing and only reads.
    pub fn optional(&self, key: Fixed, kind: Kind) -> Result<Option<Key<'q>>, Error> {
        if !self.ctx.key_by_exists(&self.names, key as usize)? {
            return Ok(None);
        }
        self.fixed(key, kind).map(Some)
    }

    pub fn ring(&self) -> Result<Key<'q>, Error> {
        self.fixed(Fixed::Ring, Kind::List)
    }

    /// `P ring`, with `P wake` opened and checked too: the keys a ring join
    /// writes. A command that may join a lane opens them before its first
    /// write, so that a damaged or forbidden one refuses the command whole
    /// instead of failing it halfway (docs/damage.md).
    pub fn joinable(&self) -> Result<Key<'q>, Error> {
        let ring = self.ring()?;
        self.wake()?;
        Ok(ring)
    }

    /// `P active`: leased job → deadline.
    pub fn leases(&self) -> Result<Key<'q>, Error> {
        self.fixed(Fixed::Leases, Kind::Zset)
    }

    /// `P gactive`: lane → leased jobs.
    pub fn active(&self) -> Result<Key<'q>, Error> {
        self.fixed(Fixed::Active, Kind::Hash)
    }

    pub fn weights(&self) -> Result<Key<'q>, Error> {
        self.fixed(Fixed::Weight, Kind::Hash)
    }

    pub fn limits(&self) -> Result<Key<'q>, Error> {
        self.fixed(Fixed::Limit, Kind::Hash)
    }

    /// `P grate`: lane → its rate.
    pub fn rates(&self) -> Result<Key<'q>, Error> {
        self.fixed(Fixed::Rate, Kind::Hash)
    }

    /// `P gtat`: lane → its rate's theoretical arrival time (µs).
    pub fn tats(&self) -> Result<Key<'q>, Error> {
        self.fixed(Fixed::Tat, Kind::Hash)
    }

    /// `P gnext`: lane → when it may be served again (throttled, or paused
    /// until then).
    pub fn next(&self) -> Result<Key<'q>, Error> {
        self.fixed(Fixed::Next, Kind::Zset)
    }

    /// Whether the lane waits in `P gnext`, its time come or not: only the
    /// claims and the timer take it out and ring it. Read without the clock,
    /// so that a command replicated as itself (`emq.replicate command`)
    /// does on a replica and at an AOF load what it did here.
    pub fn waits_in_next(&self, lane: Arg) -> Result<bool, Error> {
        let Some(next) = self.optional(Fixed::Next, Kind::Zset)? else {
            return Ok(false);
        };
        Ok(next.zset_score(lane).is_some())
    }

    pub fn schedule(&self) -> Result<Key<'q>, Error> {
        self.fixed(Fixed::Schedule, Kind::Zset)
    }

    pub fn dead(&self) -> Result<Key<'q>, Error> {
        self.fixed(Fixed::Dead, Kind::Zset)
    }

    /// `P pending`: the flat queue.
    pub fn flat(&self) -> Result<Key<'q>, Error> {
        self.fixed(Fixed::Flat, Kind::Zset)
    }

    /// `P gcredit`: lane → credit (µs), under fairness by time.
    pub fn credits(&self) -> Result<Key<'q>, Error> {
        self.fixed(Fixed::Credit, Kind::Hash)
    }

    /// `P gcost`: lane → cost (µs a job), under fairness by time.
    pub fn costs(&self) -> Result<Key<'q>, Error> {
        self.fixed(Fixed::Cost, Kind::Hash)
    }

    pub fn wake(&self) -> Result<Key<'q>, Error> {
        self.fixed(Fixed::Wake, Kind::List)
    }

    pub fn meta(&self) -> Result<Key<'q>, Error> {
        self.fixed(Fixed::Meta, Kind::Hash)
    }

    /// `P g:<lane>:pending`, untyped (a claim skips a lane whose pending key
    /// is of the wrong type; every other command refuses it).
    pub fn pending(&self, lane: &[u8]) -> Result<Key<'q>, Error> {
        self.ctx.key(&layout::pending_parts(self.prefix_bytes, lane))
    }

    pub fn pending_zset(&self, lane: &[u8]) -> Result<Key<'q>, Error> {
        self.pending(lane)?.expect(Kind::Zset)
    }

    /// `P job:<id>:logs`.
    pub fn logs(&self, job: &[u8]) -> Result<Key<'q>, Error> {
        self.ctx.key(&layout::logs_parts(self.prefix_bytes, job))
    }

    /// `P paused`'s name: a set, reached only by calls (the key API has no
    /// set calls), its permission checked here.
    pub fn paused_key(&self) -> Result<KeyName<'_>, Error> {
        let name = self.name(Fixed::Paused);
        self.ctx.check_key(name.as_arg())?;
        Ok(name)
    }

    /// Whether the lane is in `P paused` (no call when the set is absent);
    /// `WRONGTYPE` when that key is not a set.
    pub fn is_paused(&self, lane: Arg) -> Result<bool, Error> {
        let name = self.paused_key()?.as_arg();
        if !self.ctx.key_exists(name) {
            return Ok(false);
        }
        Ok(self.ctx.set_call(c"SISMEMBER", name, lane)? == 1)
    }

    /// Whether the whole queue is paused, and its fairness policy (`P meta`
    /// read once; a policy the module did not write is an error naming it).
    pub fn queue_state(&self) -> Result<(bool, Fairness), Error> {
        let Some(meta) = self.optional(Fixed::Meta, Kind::Hash)? else {
            return Ok((false, Fairness::Count));
        };
        let paused = meta.hash_has(crate::ffi::word(crate::ffi::Word::Paused));
        let Some(fairness) = meta.hash_get(crate::ffi::word(crate::ffi::Word::Fairness)) else {
            return Ok((paused, Fairness::Count));
        };
        let quantum = meta.hash_get(crate::ffi::word(crate::ffi::Word::Quantum));
        match Fairness::parse(Some(fairness.bytes()), quantum.as_ref().map(|q| q.bytes())) {
            Some(f) => Ok((paused, f)),
            None => Err(Error::bad_stored(
                "setting",
                layout::field::FAIRNESS,
                meta.name().bytes(),
                FAIRNESS_TEXT,
            )),
        }
    }

    /// Wakes the claims waiting on the queue, to look at the ring (and the
    /// flat queue) again: for a change no push signals (a resumed queue, a
    /// damaged weight, ceiling or count mended while its lane is in the ring).
    pub fn wake_waiters(&self) {
        let ring = self.name(Fixed::Ring).as_arg();
        if self.ctx.key_exists(ring) {
            self.ctx.signal_ready(ring);
        }
        self.wake_flat_waiters();
    }

    /// Wakes the flat claims (EMQ.QCLAIM, QBCLAIM) waiting on `P pending`:
    /// a job added there by the module (a creating write signals by itself;
    /// an added job may land behind heads no claim can lease).
    pub fn wake_flat_waiters(&self) {
        let pending = self.name(Fixed::Flat).as_arg();
        if self.ctx.key_exists(pending) {
            self.ctx.signal_ready(pending);
        }
    }

    /// The log line for damage met while serving (rate-limited).
    pub fn report(&self, what: impl FnOnce() -> String) {
        report::damage(self.ctx, || {
            format!("queue '{}': {}", quote(self.prefix_bytes), what())
        });
    }
}
