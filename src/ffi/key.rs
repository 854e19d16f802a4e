//! Keys: one handle per key per command, kept by the context.
//!
//! The key API caches a key's value in its handle, so a key open twice, or
//! read through one handle while written through another, reads stale or
//! freed memory. Here that cannot happen by construction: [`Ctx::key`] opens
//! a key the first time it is asked for and returns the same handle every
//! later time; handles borrow the context and are all closed together when
//! it ends (or by [`Ctx::select_db`], which takes it `&mut`, so that no
//! handle is alive then). Set keys are never opened here: they are reached
//! only through calls (`Ctx::set_call`), so no call writes under a handle.
//!
//! The module loads with `NO_IMPLICIT_SIGNAL_MODIFIED`: a handle reports its
//! key modified (WATCH, client tracking) when it closes only if one of its
//! writing methods ran, so a command may open a key for writing, read it, and
//! decide not to write it.
//!
//! Opening a key checks the caller's permission on it (`acl.rs`): every key a
//! command touches passes the user's key patterns, not only the declared one.

use std::cell::{Cell, RefCell, UnsafeCell};
use std::ffi::CStr;
use std::mem::MaybeUninit;
use std::os::raw::{c_char, c_int, c_long};
use std::ptr;

use redis_module::raw;

use super::ctx::{with_joined, Class, Ctx};
use super::names::KeyName;
use super::string::{Arg, RStr};
use crate::errors::Error;

/// Slots held inline: a command opens about eight keys, so most commands
/// allocate nothing to keep their handles.
const INLINE: usize = 16;

/// The handles of one context, in the order they were opened.
pub(super) struct KeyCache {
    pub(super) writable: bool,
    // A handle points into its slot, which must not move: the first
    // `INLINE` slots live here (filled in order, each written once while no
    // handle to it exists), the rest boxed. Slots are only removed by
    // `close_all`, under `&mut Ctx`.
    inline: [UnsafeCell<MaybeUninit<Slot>>; INLINE],
    len: Cell<usize>,
    #[allow(clippy::vec_box)]
    overflow: RefCell<Vec<Box<Slot>>>,
}

struct Slot {
    name: RStr,
    /// The name's bytes, read once (compared without a call).
    bytes: *const u8,
    len: usize,
    /// NULL when the key is missing and was opened for reading.
    ptr: Cell<*mut raw::RedisModuleKey>,
    written: Cell<bool>,
}

impl KeyCache {
    pub(super) fn new(writable: bool) -> KeyCache {
        KeyCache {
            writable,
            inline: [const { UnsafeCell::new(MaybeUninit::uninit()) }; INLINE],
            len: Cell::new(0),
            overflow: RefCell::new(Vec::new()),
        }
    }

    /// The slot named `name`, if open.
    fn find(&self, name: &[u8]) -> Option<*const Slot> {
        let inline = self.len.get().min(INLINE);
        for cell in &self.inline[..inline] {
            // SAFETY: the first `len` inline slots are initialised.
            let slot = unsafe { (*cell.get()).assume_init_ref() };
            if slot.is(name) {
                return Some(slot);
            }
        }
        self.overflow
            .borrow()
            .iter()
            .find(|s| s.is(name))
            .map(|s| &**s as *const Slot)
    }

    /// Whether a key named `name` is open.
    pub(super) fn is_open(&self, name: &[u8]) -> bool {
        self.find(name).is_some()
    }

    /// Keeps `slot`; where it now lives.
    fn keep(&self, slot: Slot) -> *const Slot {
        let at = self.len.get();
        self.len.set(at + 1);
        if at < INLINE {
            // SAFETY: slot `at` is uninitialised and nothing points to it.
            unsafe { (*self.inline[at].get()).write(slot) }
        } else {
            let boxed = Box::new(slot);
            let ptr = &*boxed as *const Slot;
            self.overflow.borrow_mut().push(boxed);
            ptr
        }
    }

    /// Closes every handle, signalling the written keys modified.
    pub(super) fn close_all(&mut self, ctx: *mut raw::RedisModuleCtx) {
        let inline = self.len.get().min(INLINE);
        self.len.set(0);
        for cell in self.inline[..inline].iter_mut().rev() {
            // SAFETY: initialised, and read out once (len is now 0).
            let slot = unsafe { cell.get_mut().assume_init_read() };
            close(ctx, &slot);
            drop(slot);
        }
        for slot in self.overflow.get_mut().drain(..).rev() {
            close(ctx, &slot);
        }
    }
}

impl Slot {
    fn new(name: RStr, ptr: *mut raw::RedisModuleKey) -> Slot {
        let bytes = name.bytes();
        Slot {
            bytes: bytes.as_ptr(),
            len: bytes.len(),
            name,
            ptr: Cell::new(ptr),
            written: Cell::new(false),
        }
    }

    fn is(&self, name: &[u8]) -> bool {
        // SAFETY: `bytes` are the bytes of `self.name`, which lives as long
        // as the slot.
        self.len == name.len() && unsafe { std::slice::from_raw_parts(self.bytes, self.len) } == name
    }
}

fn close(ctx: *mut raw::RedisModuleCtx, slot: &Slot) {
    unsafe {
        if slot.written.get() {
            api!(RedisModule_SignalModifiedKey)(ctx, slot.name.ptr);
        }
        if !slot.ptr.get().is_null() {
            api!(RedisModule_CloseKey)(slot.ptr.get());
        }
    }
}

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

    /// The key `name` (a kept name of a queue's fixed keys): as [`Ctx::key`].
    pub fn key_by(&self, name: KeyName) -> Result<Key<'_>, Error> {
        let slot = match self.keys.find(name.bytes()) {
            Some(slot) => slot,
            None => self.open_slot(name.retained())?,
        };
        // SAFETY: as in `key_named`.
        Ok(Key {
            slot: unsafe { &*slot },
            ctx: self,
        })
    }

    /// Whether the key `name` exists, without opening it (its permission is
    /// checked: the caller learns something of it).
    pub fn key_by_exists(&self, name: KeyName) -> Result<bool, Error> {
        if self.keys.find(name.bytes()).is_some() {
            return Ok(self.key_by(name)?.kind() != Kind::Empty);
        }
        self.guard.check(self, name.as_arg())?;
        Ok(self.key_exists(name.as_arg()))
    }

    fn open_slot(&self, name: RStr) -> Result<*const Slot, Error> {
        self.guard.check(self, name.as_arg())?;
        let ptr = self.open_key(&name);
        Ok(self.keys.keep(Slot::new(name, ptr)))
    }

    fn key_named(&self, name: &[u8]) -> Result<Key<'_>, Error> {
        let slot = match self.keys.find(name) {
            Some(slot) => slot,
            None => self.open_slot(super::names::name(name))?,
        };
        // SAFETY: the slot stays in the cache, unmoved, until `close_all`,
        // which needs `&mut self`: no `Key` borrowing `self` can be alive
        // then.
        Ok(Key {
            slot: unsafe { &*slot },
            ctx: self,
        })
    }
}

impl Ctx {
    fn open_key(&self, name: &RStr) -> *mut raw::RedisModuleKey {
        let mode = if self.keys.writable {
            raw::REDISMODULE_READ | raw::REDISMODULE_WRITE
        } else {
            raw::REDISMODULE_READ
        };
        unsafe { api!(RedisModule_OpenKey)(self.ptr, name.ptr, mode as c_int).cast() }
    }
}

impl<'c> Key<'c> {
    fn ptr(&self) -> *mut raw::RedisModuleKey {
        self.slot.ptr.get()
    }

    fn is_open(&self) -> bool {
        !self.ptr().is_null()
    }

    /// Closes and opens the key again: the same key, a fresh handle (and no
    /// state the old one kept).
    fn reopen(&self) {
        unsafe {
            if !self.ptr().is_null() {
                api!(RedisModule_CloseKey)(self.ptr());
            }
        }
        self.slot.ptr.set(self.ctx.open_key(&self.slot.name));
    }

    /// The key's name, as an argument (for replication and notifications).
    pub fn name(&self) -> Arg<'c> {
        self.slot.name.as_arg()
    }

    // ---- reads ----

    pub fn kind(&self) -> Kind {
        if !self.is_open() {
            return Kind::Empty;
        }
        Kind::of(unsafe { api!(RedisModule_KeyType)(self.ptr()) })
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
        unsafe { api!(RedisModule_ValueLength)(self.ptr()) }
    }

    /// Element `index` of a list (negative from the tail).
    pub fn list_get(&self, index: i64) -> Option<RStr> {
        if !self.is_open() || self.kind() != Kind::List {
            return None;
        }
        RStr::own(unsafe { api!(RedisModule_ListGet)(self.ptr(), index as c_long) })
    }

    /// Every index of a list holding `value`, from the head.
    pub fn list_positions(&self, value: &[u8]) -> Vec<usize> {
        (0..self.len())
            .filter(|&i| self.list_get(i as i64).is_some_and(|e| e.bytes() == value))
            .collect()
    }

    pub fn hash_get(&self, field: Arg) -> Option<RStr> {
        if !self.is_open() || self.kind() != Kind::Hash {
            return None;
        }
        let mut out: *mut raw::RedisModuleString = ptr::null_mut();
        unsafe {
            api!(RedisModule_HashGet)(
                self.ptr(),
                raw::REDISMODULE_HASH_NONE as c_int,
                field.ptr,
                &mut out as *mut *mut raw::RedisModuleString,
                ptr::null_mut::<c_char>(),
            );
        }
        RStr::own(out)
    }

    /// Whether a hash has `field` (no copy of the value is made).
    pub fn hash_has(&self, field: Arg) -> bool {
        if !self.is_open() || self.kind() != Kind::Hash {
            return false;
        }
        let mut exists: c_int = 0;
        unsafe {
            api!(RedisModule_HashGet)(
                self.ptr(),
                raw::REDISMODULE_HASH_EXISTS as c_int,
                field.ptr,
                &mut exists as *mut c_int,
                ptr::null_mut::<c_char>(),
            );
        }
        exists != 0
    }

    pub fn zset_score(&self, member: Arg) -> Option<f64> {
        if !self.is_open() || self.kind() != Kind::Zset {
            return None;
        }
        let mut score = 0f64;
        let status = unsafe { api!(RedisModule_ZsetScore)(self.ptr(), member.ptr, &mut score) };
        (status == raw::REDISMODULE_OK as c_int).then_some(score)
    }

    /// The lowest score of a zset, if any.
    pub fn zset_first_score(&self) -> Option<f64> {
        self.zset_range(f64::INFINITY, 1).first().map(|(_, s)| *s)
    }

    /// The lowest score of a zset above `min` (exclusive), if any.
    pub fn zset_first_score_above(&self, min: f64) -> Option<f64> {
        if !self.is_open() || self.kind() != Kind::Zset {
            return None;
        }
        unsafe {
            let mut score = None;
            if api!(RedisModule_ZsetFirstInScoreRange)(self.ptr(), min, f64::INFINITY, 1, 0)
                == raw::REDISMODULE_OK as c_int
                && api!(RedisModule_ZsetRangeEndReached)(self.ptr()) == 0
            {
                let mut s = 0f64;
                let ele = api!(RedisModule_ZsetRangeCurrentElement)(self.ptr(), &mut s);
                if RStr::own(ele).is_some() {
                    score = Some(s);
                }
            }
            api!(RedisModule_ZsetRangeStop)(self.ptr());
            score
        }
    }

    /// Whether a zset has a member scored `<= max` (no member is copied).
    pub fn zset_has_at_most(&self, max: f64) -> bool {
        if !self.is_open() || self.kind() != Kind::Zset {
            return false;
        }
        unsafe {
            let found = api!(RedisModule_ZsetFirstInScoreRange)(self.ptr(), f64::NEG_INFINITY, max, 0, 0)
                == raw::REDISMODULE_OK as c_int
                && api!(RedisModule_ZsetRangeEndReached)(self.ptr()) == 0;
            api!(RedisModule_ZsetRangeStop)(self.ptr());
            found
        }
    }

    /// At most `n` members scored `<= max`, lowest first (ties by member):
    /// ZPOPMIN order.
    pub fn zset_range(&self, max: f64, n: usize) -> Members {
        let mut out = Members::new();
        out.reserve(n.min(1024));
        if n == 0 || !self.is_open() || self.kind() != Kind::Zset {
            return out;
        }
        let key = self.ptr();
        unsafe {
            if api!(RedisModule_ZsetFirstInScoreRange)(key, f64::NEG_INFINITY, max, 0, 0)
                != raw::REDISMODULE_OK as c_int
            {
                return out;
            }
            while out.len() < n && api!(RedisModule_ZsetRangeEndReached)(key) == 0 {
                let mut score = 0f64;
                let ele = api!(RedisModule_ZsetRangeCurrentElement)(key, &mut score);
                match RStr::own(ele) {
                    Some(s) => out.push((s, score)),
                    None => break,
                }
                if api!(RedisModule_ZsetRangeNext)(key) == 0 {
                    break;
                }
            }
            // Stopped before anything is removed: the range must not be open
            // across a ZsetRem.
            api!(RedisModule_ZsetRangeStop)(key);
        }
        out
    }

    // ---- writes (on a write command only) ----

    fn wrote(&self) {
        assert!(
            self.ctx.keys.writable && self.is_open(),
            "a write through a key opened for reading"
        );
        self.slot.written.set(true);
    }

    /// Reports the key modified on close without changing it (a rotation
    /// of a one-element list).
    pub fn touch(&self) {
        self.wrote();
    }

    pub fn list_push_tail(&self, value: Arg) {
        self.wrote();
        unsafe { api!(RedisModule_ListPush)(self.ptr(), raw::REDISMODULE_LIST_TAIL as c_int, value.ptr) };
    }

    pub fn list_pop_head(&self) -> Option<RStr> {
        self.wrote();
        RStr::own(unsafe { api!(RedisModule_ListPop)(self.ptr(), raw::REDISMODULE_LIST_HEAD as c_int) })
    }

    /// Removes the element at `index` (the list is deleted when emptied).
    pub fn list_delete(&self, index: usize) {
        self.wrote();
        unsafe { api!(RedisModule_ListDelete)(self.ptr(), index as c_long) };
        // The key API keeps a list iterator across deletes, moving its
        // position itself, and on a quicklist it can be one off for the next
        // index asked for (a wrong element deleted): a fresh handle starts
        // with no iterator.
        self.reopen();
    }

    /// Adds or updates; with `nx` only adds. Returns whether it was added.
    pub fn zset_add(&self, score: f64, member: Arg, nx: bool) -> bool {
        self.wrote();
        let mut flags: c_int = if nx { raw::REDISMODULE_ZADD_NX as c_int } else { 0 };
        unsafe { api!(RedisModule_ZsetAdd)(self.ptr(), score, member.ptr, &mut flags) };
        flags & raw::REDISMODULE_ZADD_ADDED as c_int != 0
    }

    pub fn zset_rem(&self, member: Arg) -> bool {
        self.wrote();
        let mut deleted: c_int = 0;
        unsafe { api!(RedisModule_ZsetRem)(self.ptr(), member.ptr, &mut deleted) };
        deleted != 0
    }

    pub fn hash_set(&self, field: Arg, value: Arg) {
        self.wrote();
        unsafe {
            api!(RedisModule_HashSet)(
                self.ptr(),
                raw::REDISMODULE_HASH_NONE as c_int,
                field.ptr,
                value.ptr,
                ptr::null_mut::<c_char>(),
            );
        }
    }

    pub fn hash_del(&self, field: Arg) {
        self.wrote();
        // REDISMODULE_HASH_DELETE, which bindgen does not emit: the address 1.
        let delete: *mut raw::RedisModuleString = ptr::without_provenance_mut(1);
        unsafe {
            api!(RedisModule_HashSet)(
                self.ptr(),
                raw::REDISMODULE_HASH_NONE as c_int,
                field.ptr,
                delete,
                ptr::null_mut::<c_char>(),
            );
        }
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
