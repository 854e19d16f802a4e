//! One queue: its keys (SPEC section 1), a lane's state read and validated,
//! and the ring following a lane's change. Every command works through a
//! [`Queue`]; opening one puts every key it touches under the caller's
//! permissions.

use std::rc::Rc;

use crate::args::parse_i64;
use crate::commands::Call;
use crate::errors::{Error, INTEGER};
use crate::ffi::{name_set, word, Arg, Class, Ctx, Key, KeyName, Kind, NameSet, Word};
use crate::keys::{self, Fixed};
use crate::schedule::{Lane, RingChange};

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
        call.ctx.guard_keys(prefix);
        Queue::internal(call, prefix)
    }

    /// The queue for the module's own work (the expiry timer): no caller,
    /// no key permissions to check.
    pub fn internal(call: &'q Call<'q>, prefix: Arg<'q>) -> Queue<'q> {
        let prefix_bytes = prefix.bytes();
        Queue {
            call,
            ctx: call.ctx,
            prefix,
            prefix_bytes,
            names: name_set(prefix_bytes, keys::SUFFIXES),
        }
    }

    /// The name of the fixed key `key` (`P` followed by its suffix).
    pub fn name(&self, key: Fixed) -> KeyName<'_> {
        self.names.get(key as usize)
    }

    /// The fixed key `key`, opened and type-checked. Never `P gpaused`: a
    /// set is reached only by calls, which must not write under a handle.
    fn typed(&self, key: Fixed, kind: Kind) -> Result<Key<'q>, Error> {
        assert!(key != Fixed::Paused, "P gpaused opened as a key");
        self.ctx.key_by(self.names.get(key as usize))?.expect(kind)
    }

    /// The fixed key `key` when it exists (typed; its permission checked
    /// either way); `None`, without opening it, when it does not. For keys a
    /// command only reads.
    pub fn optional(&self, key: Fixed, kind: Kind) -> Result<Option<Key<'q>>, Error> {
        if !self.ctx.key_by_exists(self.name(key))? {
            return Ok(None);
        }
        self.typed(key, kind).map(Some)
    }

    pub fn ring(&self) -> Result<Key<'q>, Error> {
        self.typed(Fixed::Ring, Kind::List)
    }

    pub fn leases(&self) -> Result<Key<'q>, Error> {
        self.typed(Fixed::Leases, Kind::Zset)
    }

    pub fn jlease(&self) -> Result<Key<'q>, Error> {
        self.typed(Fixed::Jlease, Kind::Hash)
    }

    pub fn active(&self) -> Result<Key<'q>, Error> {
        self.typed(Fixed::Active, Kind::Hash)
    }

    pub fn weights(&self) -> Result<Key<'q>, Error> {
        self.typed(Fixed::Weight, Kind::Hash)
    }

    pub fn limits(&self) -> Result<Key<'q>, Error> {
        self.typed(Fixed::Limit, Kind::Hash)
    }

    pub fn jreturns(&self) -> Result<Key<'q>, Error> {
        self.typed(Fixed::Jreturns, Kind::Hash)
    }

    pub fn dead(&self) -> Result<Key<'q>, Error> {
        self.typed(Fixed::Dead, Kind::Zset)
    }

    pub fn jdead(&self) -> Result<Key<'q>, Error> {
        self.typed(Fixed::Jdead, Kind::Hash)
    }

    pub fn policy(&self) -> Result<Key<'q>, Error> {
        self.typed(Fixed::Policy, Kind::Hash)
    }

    /// `P g:<lane>:pending`, untyped (a claim skips a lane whose pending key
    /// is of the wrong type; every other command refuses it).
    pub fn pending(&self, lane: &[u8]) -> Result<Key<'q>, Error> {
        self.ctx.key(&keys::pending_parts(self.prefix_bytes, lane))
    }

    pub fn pending_zset(&self, lane: &[u8]) -> Result<Key<'q>, Error> {
        self.pending(lane)?.expect(Kind::Zset)
    }

    /// `P gpaused`'s name: a set, reached only by calls (the key API has no
    /// set calls), its permission checked here.
    pub fn paused_key(&self) -> Result<KeyName<'_>, Error> {
        let name = self.name(Fixed::Paused);
        self.ctx.check_key(name.as_arg())?;
        Ok(name)
    }

    /// Whether the lane is in `P gpaused` (no call when the set is absent);
    /// `WRONGTYPE` when that key is not a set.
    pub fn is_paused(&self, lane: Arg) -> Result<bool, Error> {
        let name = self.paused_key()?.as_arg();
        if !self.ctx.key_exists(name) {
            return Ok(false);
        }
        Ok(self.ctx.set_call(c"SISMEMBER", name, lane)? == 1)
    }

    /// The lane's numbers: depth, active count, ceiling, paused. Every key
    /// read is type-checked and every number validated.
    pub fn lane(&self, lane: Arg) -> Result<Lane, Error> {
        self.lane_read(lane).lane()
    }

    /// The lane's numbers, each read on its own: what is damaged says so
    /// without hiding the rest.
    pub fn lane_read(&self, lane: Arg) -> LaneRead {
        LaneRead {
            depth: self.pending_zset(lane.bytes()).map(|z| z.len() as u64),
            active: self
                .active()
                .and_then(|h| stored_int(h, lane, "active count of lane"))
                .map(|a| a.unwrap_or(0)),
            limit: self.limits().and_then(|h| stored_int(h, lane, "limit of lane")),
            paused: self.is_paused(lane),
        }
    }

    /// The lane's numbers with `limit` for its ceiling (the stored one is
    /// not read: it is about to be replaced, and may be damaged).
    pub fn lane_with_limit(&self, lane: Arg, limit: Option<i64>) -> Result<Lane, Error> {
        let depth = self.pending_zset(lane.bytes())?.len() as u64;
        let active = stored_int(self.active()?, lane, "active count of lane")?.unwrap_or(0);
        let paused = self.is_paused(lane)?;
        Ok(Lane {
            depth,
            active,
            limit,
            paused,
        })
    }

    /// Applies a ring transition: `RPUSH` on joining (waking the claims
    /// blocked on the ring), every occurrence removed on leaving (`LREM`).
    pub fn follow(&self, lane: Arg, change: RingChange) -> Result<(), Error> {
        let ring = self.ring()?;
        match change {
            RingChange::Stay => {}
            RingChange::Join => {
                ring.list_push_tail(lane);
                ring.notify(Class::List, c"rpush");
                self.ctx.signal_ready(ring.name());
                self.call.repl.effect(c"RPUSH", &[ring.name(), lane]);
            }
            RingChange::Leave => self.ring_remove(ring, lane),
        }
        Ok(())
    }

    /// The ring holds the lane exactly once if `serviceable`, else not at
    /// all, whatever it held: for a lane whose earlier state is unknown (a
    /// damaged value just replaced). Scans the ring.
    pub fn settle(&self, lane: Arg, serviceable: bool) -> Result<(), Error> {
        let ring = self.ring()?;
        if ring.list_positions(lane.bytes()).len() == usize::from(serviceable) {
            return Ok(());
        }
        self.ring_remove(ring, lane);
        if serviceable {
            self.follow(lane, RingChange::Join)?;
        }
        Ok(())
    }

    /// `LREM P gring 0 lane`, through the key API.
    pub fn ring_remove(&self, ring: Key, lane: Arg) {
        let positions = ring.list_positions(lane.bytes());
        if positions.is_empty() {
            return;
        }
        // From the tail, so that the positions still to go do not move.
        for &i in positions.iter().rev() {
            ring.list_delete(i);
        }
        ring.notify(Class::List, c"lrem");
        self.call
            .repl
            .effect(c"LREM", &[ring.name(), word(Word::Zero), lane]);
    }

    /// Sets the lane's active count, removing the field at 0 or below.
    pub fn set_active(&self, lane: Arg, active: i64) -> Result<(), Error> {
        let hash = self.active()?;
        if active > 0 {
            let v = self.ctx.string_from_i64(active);
            hash.hash_set(lane, v.as_arg());
            hash.notify(Class::Hash, c"hincrby");
            self.call.repl.effect(c"HSET", &[hash.name(), lane, v.as_arg()]);
        } else {
            // What HINCRBY to 0 and the HDEL after it fire.
            hash.hash_del(lane);
            self.ctx.notify(Class::Hash, c"hincrby", hash.name());
            hash.notify(Class::Hash, c"hdel");
            self.call.repl.effect(c"HDEL", &[hash.name(), lane]);
        }
        Ok(())
    }

    /// Wakes the claims waiting on the queue, to look at the ring again: for
    /// a change that may make a lane already in the ring servable (a damaged
    /// weight, ceiling or count mended), which no ring join would signal.
    pub fn wake_waiters(&self) {
        let ring = self.name(Fixed::Ring).as_arg();
        if self.ctx.key_exists(ring) {
            self.ctx.signal_ready(ring);
        }
    }

    /// The log line for damage met while serving (rate-limited).
    pub fn report(&self, what: impl FnOnce() -> String) {
        crate::report::damage(self.ctx, || {
            format!(
                "queue '{}': {}",
                crate::errors::quote(self.prefix.bytes()),
                what()
            )
        });
    }
}

/// A lane's numbers as [`Queue::lane_read`] reads them.
pub struct LaneRead {
    pub depth: Result<u64, Error>,
    pub active: Result<i64, Error>,
    pub limit: Result<Option<i64>, Error>,
    pub paused: Result<bool, Error>,
}

impl LaneRead {
    /// The lane, or the first error met reading it (in the order read).
    pub fn lane(&self) -> Result<Lane, Error> {
        Ok(Lane {
            depth: self.depth.clone()?,
            active: self.active.clone()?,
            limit: self.limit.clone()?,
            paused: self.paused.clone()?,
        })
    }
}

/// An integer field of a hash: `None` when the field is missing; an error
/// naming the key and the field when the value is not an integer.
pub fn stored_int(hash: Key, field: Arg, what: &'static str) -> Result<Option<i64>, Error> {
    match hash.hash_get(field) {
        None => Ok(None),
        Some(v) => parse_i64(v.bytes())
            .map(Some)
            .ok_or_else(|| Error::bad_stored(what, field.bytes(), hash.name().bytes(), INTEGER)),
    }
}
