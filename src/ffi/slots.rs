//! The key handles of one context, one per key, in the order they were
//! opened (`key.rs` hands out views of them).
//!
//! The key API caches a key's value in its handle, so a key open twice, or
//! read through one handle while written through another, reads stale or
//! freed memory. Here a key is opened once per context and every later ask
//! gets the same handle; the handles are closed together when the context
//! ends (or when it switches databases, which takes it `&mut`).

use std::cell::{Cell, RefCell, UnsafeCell};
use std::mem::{ManuallyDrop, MaybeUninit};

use redis_module::raw;
use rustc_hash::FxHashMap;

use super::string::RStr;

/// Slots held inline: a command opens about eight keys, so most commands
/// allocate nothing to keep their handles.
const INLINE: usize = 16;
/// Slots past the inline ones are allocated this many at a time: a claim
/// of 32 rows or a sweep of 100 leases opens dozens of keys, and a box per
/// slot was an allocation per key.
const CHUNK: usize = 32;

type Cells<const N: usize> = [UnsafeCell<MaybeUninit<Slot>>; N];

pub(super) struct KeyCache {
    pub(super) writable: bool,
    // A handle points into its slot, which must not move: the first
    // `INLINE` slots live here, the rest in boxed chunks (each slot written
    // once, in order, while no handle to it exists). Slots are only removed
    // by `close_all`, under `&mut`.
    inline: Cells<INLINE>,
    len: Cell<usize>,
    /// One bit per open name's [`filter_bit`]: a name whose bit is clear is
    /// not open, found without a scan (most asks are for keys not yet open).
    filter: Cell<u64>,
    // Boxed: a chunk must not move when the vector grows.
    #[allow(clippy::vec_box)]
    overflow: RefCell<Vec<Box<Cells<CHUNK>>>>,
    /// The overflow slots by name: a sweep of 100 leases opens some 200
    /// keys, and a scan per open made it quadratic. Keyed by the slot's own
    /// name bytes (no copy of them).
    by_name: RefCell<FxHashMap<SlotName, *const Slot>>,
}

/// A slot's name bytes, hashed and compared as a byte string; valid while
/// its slot is (the map is emptied before the slots are closed).
#[derive(Clone, Copy)]
struct SlotName {
    bytes: *const u8,
    len: usize,
}

impl SlotName {
    fn bytes(&self) -> &[u8] {
        // SAFETY: the bytes of a live slot's name (see the type).
        unsafe { std::slice::from_raw_parts(self.bytes, self.len) }
    }
}

impl PartialEq for SlotName {
    fn eq(&self, other: &Self) -> bool {
        self.bytes() == other.bytes()
    }
}

impl Eq for SlotName {}

impl std::hash::Hash for SlotName {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.bytes().hash(state)
    }
}

impl std::borrow::Borrow<[u8]> for SlotName {
    fn borrow(&self) -> &[u8] {
        self.bytes()
    }
}

pub(super) struct Slot {
    /// Released at close when `owned`; else a kept name of a set the
    /// context holds until its keys are closed (no reference of its own).
    pub(super) name: ManuallyDrop<RStr>,
    owned: bool,
    /// The name's bytes, read once (compared without a call).
    bytes: *const u8,
    len: usize,
    /// NULL when the key is missing and was opened for reading.
    pub(super) ptr: Cell<*mut raw::RedisModuleKey>,
    pub(super) written: Cell<bool>,
    /// The key's type code as last read; forgotten by every write through
    /// the handle (the only way a key open here changes: `key.rs`).
    pub(super) kind: Cell<Option<std::os::raw::c_int>>,
}

impl KeyCache {
    pub(super) fn new(writable: bool) -> KeyCache {
        KeyCache {
            writable,
            inline: [const { UnsafeCell::new(MaybeUninit::uninit()) }; INLINE],
            len: Cell::new(0),
            filter: Cell::new(0),
            overflow: RefCell::new(Vec::new()),
            by_name: RefCell::new(FxHashMap::default()),
        }
    }

    /// The slot named `name`, if open. Inline: most asks are for a key not
    /// yet open, answered by the filter alone.
    #[inline]
    pub(super) fn find(&self, name: &[u8]) -> Option<*const Slot> {
        if self.filter.get() & filter_bit(name) == 0 {
            return None;
        }
        self.scan(name)
    }

    fn scan(&self, name: &[u8]) -> Option<*const Slot> {
        let inline = self.len.get().min(INLINE);
        for cell in &self.inline[..inline] {
            // SAFETY: the first `len` inline slots are initialised.
            let slot = unsafe { (*cell.get()).assume_init_ref() };
            if slot.is(name) {
                return Some(slot);
            }
        }
        if self.len.get() <= INLINE {
            return None;
        }
        self.by_name.borrow().get(name).copied()
    }

    /// Whether a key named `name` is open.
    pub(super) fn is_open(&self, name: &[u8]) -> bool {
        self.find(name).is_some()
    }

    /// Keeps `slot`; where it now lives. Inline: a command's first keys
    /// go to the inline slots.
    #[inline]
    pub(super) fn keep(&self, slot: Slot) -> *const Slot {
        let at = self.len.get();
        self.len.set(at + 1);
        self.filter.set(self.filter.get() | filter_bit(slot.name_bytes()));
        if at < INLINE {
            // SAFETY: slot `at` is uninitialised and nothing points to it.
            return unsafe { (*self.inline[at].get()).write(slot) };
        }
        self.keep_overflow(at, slot)
    }

    #[inline(never)]
    fn keep_overflow(&self, at: usize, slot: Slot) -> *const Slot {
        let (chunk, i) = ((at - INLINE) / CHUNK, (at - INLINE) % CHUNK);
        let mut overflow = self.overflow.borrow_mut();
        if chunk == overflow.len() {
            overflow.push(Box::new(
                [const { UnsafeCell::new(MaybeUninit::uninit()) }; CHUNK],
            ));
        }
        let name = SlotName {
            bytes: slot.bytes,
            len: slot.len,
        };
        // SAFETY: slot `at` is uninitialised and nothing points to it; its
        // chunk is boxed, so it never moves while the cache holds it.
        let ptr: *const Slot = unsafe { (*overflow[chunk][i].get()).write(slot) };
        let mut by_name = self.by_name.borrow_mut();
        if by_name.is_empty() {
            by_name.reserve(CHUNK);
        }
        by_name.insert(name, ptr);
        ptr
    }

    /// Closes every handle, signalling the written keys modified.
    pub(super) fn close_all(&mut self, ctx: *mut raw::RedisModuleCtx) {
        let len = self.len.replace(0);
        self.filter.set(0);
        let inline = len.min(INLINE);
        for cell in self.inline[..inline].iter_mut().rev() {
            // SAFETY: initialised, and read out once (len is now 0).
            let slot = unsafe { cell.get_mut().assume_init_read() };
            slot.close(ctx);
        }
        if len <= INLINE {
            // No overflow slot was kept, none named.
            return;
        }
        self.by_name.get_mut().clear();
        let mut left = len - inline;
        for chunk in std::mem::take(self.overflow.get_mut()).iter_mut() {
            for cell in chunk[..left.min(CHUNK)].iter_mut() {
                // SAFETY: one of the `len - INLINE` overflow slots written, read out once.
                let slot = unsafe { cell.get_mut().assume_init_read() };
                slot.close(ctx);
            }
            left = left.saturating_sub(CHUNK);
        }
    }
}

/// A name's bit in [`KeyCache`]'s filter: from its length and last byte (a
/// queue's keys share their prefix; their suffixes differ in both).
#[inline]
fn filter_bit(name: &[u8]) -> u64 {
    let last = name.last().copied().unwrap_or(0) as usize;
    1 << ((name.len() ^ last.wrapping_mul(7)) & 63)
}

impl Slot {
    /// `bytes`: `name`'s own bytes when known (they live as long as the
    /// string does); else they are fetched.
    pub(super) fn new(name: RStr, bytes: Option<&[u8]>, ptr: *mut raw::RedisModuleKey) -> Slot {
        let bytes = match bytes {
            Some(b) => (b.as_ptr(), b.len()),
            None => {
                let b = name.bytes();
                (b.as_ptr(), b.len())
            }
        };
        Slot {
            bytes: bytes.0,
            len: bytes.1,
            name: ManuallyDrop::new(name),
            owned: true,
            ptr: Cell::new(ptr),
            written: Cell::new(false),
            kind: Cell::new(None),
        }
    }

    /// A slot named by a string it takes no reference to: the caller keeps
    /// the string alive, unchanged, until the slot is closed; `bytes` are
    /// its own bytes.
    pub(super) fn borrowed(
        name: *mut raw::RedisModuleString,
        bytes: &[u8],
        ptr: *mut raw::RedisModuleKey,
    ) -> Slot {
        Slot {
            bytes: bytes.as_ptr(),
            len: bytes.len(),
            name: ManuallyDrop::new(RStr { ptr: name }),
            owned: false,
            ptr: Cell::new(ptr),
            written: Cell::new(false),
            kind: Cell::new(None),
        }
    }

    fn name_bytes(&self) -> &[u8] {
        // SAFETY: `bytes` are the bytes of `self.name`, which lives as long
        // as the slot.
        unsafe { std::slice::from_raw_parts(self.bytes, self.len) }
    }

    fn is(&self, name: &[u8]) -> bool {
        self.len == name.len() && self.name_bytes() == name
    }

    fn close(mut self, ctx: *mut raw::RedisModuleCtx) {
        // SAFETY: the handle was opened in `ctx`, which is still alive, and
        // is closed once (the slot is being dropped).
        unsafe {
            if self.written.get() {
                api!(RedisModule_SignalModifiedKey)(ctx, self.name.ptr);
            }
            if !self.ptr.get().is_null() {
                api!(RedisModule_CloseKey)(self.ptr.get());
            }
            if self.owned {
                ManuallyDrop::drop(&mut self.name);
            }
        }
    }
}
