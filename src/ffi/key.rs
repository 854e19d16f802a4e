//! Keys: a view ([`Key`]) of the context's one handle per key (`slots.rs`).
//!
//! The module loads with `NO_IMPLICIT_SIGNAL_MODIFIED`: a handle reports its
//! key modified (WATCH, client tracking) when it closes only if one of its
//! writing methods ran, so a command may open a key for writing, read it, and
//! decide not to write it. Set keys are never opened here: they are reached
//! only through calls (`call.rs`), so no call writes under a handle.
//!
//! Opening a key checks the caller's permission on it (`acl.rs`): every key a
//! command touches passes the user's key patterns, not only the declared one.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_long};
use std::ptr;

use redis_module::raw;

use super::ctx::{Class, Ctx};
use std::rc::Rc;

use super::names::NameSet;
use super::slots::Slot;
use super::string::{with_joined, Arg, RStr};
use crate::model::error::Error;

/// Zset members with their scores, the first few on the stack.
pub type Members = smallvec::SmallVec<[(RStr, f64); 4]>;

/// A key opened by [`Ctx::key`]: reads on any command, writes on a write
/// command. Copy: it is a view of the context's one handle of the key.
#[derive(Clone, Copy)]
pub struct Key<'c> {
    slot: &'c Slot,
    ctx: &'c Ctx,
}

/// The type of a key, as far as the commands care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Empty,
    List,
    Hash,
    Set,
    Zset,
    String,
    Other,
}

impl Kind {
    fn of(code: c_int) -> Kind {
        // Compared as integers: newer servers have types the crate lacks.
        match code as isize {
            raw::REDISMODULE_KEYTYPE_EMPTY => Kind::Empty,
            raw::REDISMODULE_KEYTYPE_LIST => Kind::List,
            raw::REDISMODULE_KEYTYPE_HASH => Kind::Hash,
            raw::REDISMODULE_KEYTYPE_SET => Kind::Set,
            raw::REDISMODULE_KEYTYPE_ZSET => Kind::Zset,
            raw::REDISMODULE_KEYTYPE_STRING => Kind::String,
            _ => Kind::Other,
        }
    }

    /// `WRONGTYPE` unless the key is missing or of type `want`.
    pub fn expect(self, want: Kind) -> Result<(), Error> {
        if self == Kind::Empty || self == want {
            Ok(())
        } else {
            Err(Error::WrongType)
        }
    }
}

impl Ctx {
    /// The key named by `parts` joined: opened (and its permission checked)
    /// the first time, the same handle after that.
    pub fn key(&self, parts: &[&[u8]]) -> Result<Key<'_>, Error> {
        with_joined(parts, |name| self.key_named(name))
    }

    /// As [`Ctx::key`], for a key named once in a while (a job's row): its
    /// name is made for this call, not kept between calls, where a sweep of
    /// thousands of rows would only churn the kept names.
    pub fn key_once(&self, parts: &[&[u8]]) -> Result<Key<'_>, Error> {
        with_joined(parts, |name| {
            let slot = match self.keys.find(name) {
                Some(slot) => slot,
                None => self.open_slot(self.string(name), None)?,
            };
            Ok(self.key_at(slot))
        })
    }

    /// The key named `set`'s name `i` (a queue's fixed key): as
    /// [`Ctx::key`]. The context holds `set` until its keys are closed, so
    /// the slot takes no reference to the name of its own.
    pub fn key_by(&self, set: &Rc<NameSet>, i: usize) -> Result<Key<'_>, Error> {
        let name = set.get(i);
        let slot = match self.keys.find(name.bytes()) {
            Some(slot) => slot,
            None => {
                self.guard.check(self.ptr, name.as_arg())?;
                self.hold(set);
                let ptr = self.open_key(name.as_arg());
                self.keys.keep(Slot::borrowed(name.ptr, name.bytes(), ptr))
            }
        };
        Ok(self.key_at(slot))
    }

    /// Whether the key named `set`'s name `i` exists, without opening it
    /// (its permission is checked: the caller learns something of it).
    pub fn key_by_exists(&self, set: &Rc<NameSet>, i: usize) -> Result<bool, Error> {
        let name = set.get(i);
        if self.keys.find(name.bytes()).is_some() {
            return Ok(self.key_by(set, i)?.kind() != Kind::Empty);
        }
        self.guard.check(self.ptr, name.as_arg())?;
        Ok(self.key_exists(name.as_arg()))
    }

    /// Opens `name` into a new slot; `bytes`, when known, must be the
    /// string's own bytes (kept, not copied; else they are fetched).
    fn open_slot(&self, name: RStr, bytes: Option<&[u8]>) -> Result<*const Slot, Error> {
        self.guard.check(self.ptr, name.as_arg())?;
        let ptr = self.open_key(name.as_arg());
        Ok(self.keys.keep(Slot::new(name, bytes, ptr)))
    }

    fn key_named(&self, name: &[u8]) -> Result<Key<'_>, Error> {
        let slot = match self.keys.find(name) {
            Some(slot) => slot,
            None => {
                let (name, bytes) = super::names::name(name);
                self.open_slot(name, Some(bytes))?
            }
        };
        Ok(self.key_at(slot))
    }

    fn key_at(&self, slot: *const Slot) -> Key<'_> {
        Key {
            // SAFETY: the slot stays in the cache, unmoved, until `close_all`, which needs `&mut Ctx`: no `Key` borrowing the context can be alive then.
            slot: unsafe { &*slot },
            ctx: self,
        }
    }
}

impl Ctx {
    /// One field of the hash named by `parts` joined, read through a handle
    /// closed at once (its permission checked): for walks over many keys the
    /// call does not write, which must not keep a handle per key. A key this
    /// context has open is read through its handle.
    pub fn peek_field(&self, parts: &[&[u8]], field: Arg) -> Result<Option<RStr>, Error> {
        with_joined(parts, |name| {
            if self.keys.find(name).is_some() {
                return Ok(self.key_named(name)?.hash_get(field));
            }
            let name = self.string(name);
            self.guard.check(self.ptr, name.as_arg())?;
            // SAFETY: a live context and name; the handle is read-only, read
            // once and closed before returning.
            unsafe {
                let key: *mut raw::RedisModuleKey =
                    api!(RedisModule_OpenKey)(self.ptr, name.ptr, raw::REDISMODULE_READ as c_int).cast();
                if key.is_null() {
                    return Ok(None);
                }
                let mut out: *mut raw::RedisModuleString = ptr::null_mut();
                if Kind::of(api!(RedisModule_KeyType)(key)) == Kind::Hash {
                    api!(RedisModule_HashGet)(
                        key,
                        raw::REDISMODULE_HASH_NONE as c_int,
                        field.ptr,
                        &mut out as *mut *mut raw::RedisModuleString,
                        ptr::null_mut::<c_char>(),
                    );
                }
                api!(RedisModule_CloseKey)(key);
                Ok(RStr::own(out))
            }
        })
    }
}

impl Ctx {
    fn open_key(&self, name: Arg) -> *mut raw::RedisModuleKey {
        let mode = if self.keys.writable {
            raw::REDISMODULE_READ | raw::REDISMODULE_WRITE
        } else {
            raw::REDISMODULE_READ
        };
        // SAFETY: a live context and name; the handle is kept and closed by its slot.
        unsafe { api!(RedisModule_OpenKey)(self.ptr, name.ptr, mode as c_int).cast() }
    }
}

impl<'c> Key<'c> {
    pub(super) fn ptr(&self) -> *mut raw::RedisModuleKey {
        self.slot.ptr.get()
    }

    pub(super) fn is_open(&self) -> bool {
        !self.ptr().is_null()
    }

    /// Closes and opens the key again: the same key, a fresh handle (and no
    /// state the old one kept).
    fn reopen(&self) {
        // SAFETY: the old handle is this slot's and closed once; the slot takes the new one.
        unsafe {
            if !self.ptr().is_null() {
                api!(RedisModule_CloseKey)(self.ptr());
            }
        }
        self.slot.ptr.set(self.ctx.open_key(self.slot.name.as_arg()));
        self.slot.kind.set(None);
    }

    /// The key's name, as an argument (for replication and notifications).
    pub fn name(&self) -> Arg<'c> {
        self.slot.name.as_arg()
    }

    // ---- reads ----

    pub fn kind(&self) -> Kind {
        if let Some(code) = self.slot.kind.get() {
            return Kind::of(code);
        }
        let code = if self.is_open() {
            // SAFETY: an open handle (checked above).
            unsafe { api!(RedisModule_KeyType)(self.ptr()) }
        } else {
            raw::REDISMODULE_KEYTYPE_EMPTY as c_int
        };
        self.slot.kind.set(Some(code));
        Kind::of(code)
    }

    /// `WRONGTYPE` unless the key is missing or of type `want`.
    pub fn expect(&self, want: Kind) -> Result<Key<'c>, Error> {
        self.kind().expect(want).map(|_| *self)
    }

    /// Elements of a list, zset or hash; 0 for a missing key.
    pub fn len(&self) -> usize {
        if !self.is_open() {
            return 0;
        }
        // SAFETY: an open handle (checked above).
        unsafe { api!(RedisModule_ValueLength)(self.ptr()) }
    }

    /// The key's time to live in ms (`PTTL`); `None` when it has none or
    /// does not exist.
    pub fn expire_ms(&self) -> Option<i64> {
        if self.kind() == Kind::Empty {
            return None;
        }
        // SAFETY: an open key.
        let ttl = unsafe { api!(RedisModule_GetExpire)(self.ptr()) };
        (ttl != raw::REDISMODULE_NO_EXPIRE as i64).then_some(ttl)
    }

    /// A string key's value; `None` for a key of any other kind.
    pub fn string_value(&self) -> Option<Vec<u8>> {
        if self.kind() != Kind::String {
            return None;
        }
        let mut len = 0usize;
        // SAFETY: an open string key; the pointer is read before anything can write the key.
        unsafe {
            let p = api!(RedisModule_StringDMA)(self.ptr(), &mut len, raw::REDISMODULE_READ as c_int);
            (!p.is_null()).then(|| std::slice::from_raw_parts(p.cast::<u8>(), len).to_vec())
        }
    }

    /// Element `index` of a list (negative from the tail).
    pub fn list_get(&self, index: i64) -> Option<RStr> {
        if !self.is_open() || self.kind() != Kind::List {
            return None;
        }
        // SAFETY: an open list key (checked above).
        RStr::own(unsafe { api!(RedisModule_ListGet)(self.ptr(), index as c_long) })
    }

    /// Every index of a list holding `value`, from the head.
    pub fn list_positions(&self, value: &[u8]) -> Vec<usize> {
        (0..self.len())
            .filter(|&i| self.list_get(i as i64).is_some_and(|e| e.bytes() == value))
            .collect()
    }

    // ---- writes (on a write command only) ----

    pub(super) fn wrote(&self) {
        assert!(
            self.ctx.keys.writable && self.is_open(),
            "a write through a key opened for reading"
        );
        self.slot.written.set(true);
        // The write may create, retype or empty the key.
        self.slot.kind.set(None);
    }

    /// As [`Key::wrote`] for a write that may change nothing: `write` runs
    /// on a key checked writable, and the key is reported modified on close
    /// only when it says it changed it.
    pub(super) fn wrote_if(&self, write: impl FnOnce() -> bool) -> bool {
        let before = self.slot.written.get();
        self.wrote();
        let changed = write();
        // A type read inside `write`, before it wrote, is not kept.
        self.slot.kind.set(None);
        self.slot.written.set(before || changed);
        changed
    }

    /// Reports the key modified on close without changing it (a rotation
    /// of a one-element list).
    pub fn touch(&self) {
        self.wrote();
    }

    pub fn list_push_tail(&self, value: Arg) {
        self.wrote();
        // SAFETY: an open key opened for writing (`wrote` checked it), and a live string.
        unsafe { api!(RedisModule_ListPush)(self.ptr(), raw::REDISMODULE_LIST_TAIL as c_int, value.ptr) };
    }

    pub fn list_push_head(&self, value: Arg) {
        self.wrote();
        // SAFETY: an open key opened for writing, and a live string.
        unsafe { api!(RedisModule_ListPush)(self.ptr(), raw::REDISMODULE_LIST_HEAD as c_int, value.ptr) };
    }

    pub fn list_pop_tail(&self) -> Option<RStr> {
        self.wrote();
        // SAFETY: an open key opened for writing.
        RStr::own(unsafe { api!(RedisModule_ListPop)(self.ptr(), raw::REDISMODULE_LIST_TAIL as c_int) })
    }

    /// Deletes the key (`DEL`), whatever it holds.
    pub fn delete(&self) {
        self.wrote();
        // SAFETY: an open key opened for writing.
        unsafe { api!(RedisModule_DeleteKey)(self.ptr()) };
    }

    pub fn list_pop_head(&self) -> Option<RStr> {
        self.wrote();
        // SAFETY: an open key opened for writing.
        RStr::own(unsafe { api!(RedisModule_ListPop)(self.ptr(), raw::REDISMODULE_LIST_HEAD as c_int) })
    }

    /// Removes the element at `index` (the list is deleted when emptied).
    pub fn list_delete(&self, index: usize) {
        self.wrote();
        // SAFETY: an open list key opened for writing; the index is within its length (the caller's positions).
        unsafe { api!(RedisModule_ListDelete)(self.ptr(), index as c_long) };
        // The key API keeps a list iterator across deletes, moving its
        // position itself, and on a quicklist it can be one off for the next
        // index asked for (a wrong element deleted): a fresh handle starts
        // with no iterator.
        self.reopen();
    }

    /// Fires `event` on the key after a write that only adds (an `HSET`, a
    /// `ZADD`, a push): it cannot have emptied the key, so no `del` to look
    /// for.
    pub fn notify_added(&self, class: Class, event: &CStr) {
        self.ctx.notify(class, event, self.name());
    }

    /// Fires `event` on the key, and `del` when the write emptied it (the
    /// server deletes emptied aggregates), as core commands do.
    pub fn notify(&self, class: Class, event: &CStr) {
        self.ctx.notify(class, event, self.name());
        if self.kind() == Kind::Empty {
            self.ctx.notify(Class::Generic, c"del", self.name());
        }
    }
}
