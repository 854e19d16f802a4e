//! Key names, kept between calls: a claim opens the same seven or so keys
//! every time, and making each name a new string is a tenth of a claim's
//! cost. Every name made is kept (up to a bound, then the lot is dropped)
//! and handed out as one more reference to the same string.

use std::cell::RefCell;
use std::mem::ManuallyDrop;
use std::rc::Rc;

use rustc_hash::FxHashMap as HashMap;
use std::os::raw::c_char;
use std::ptr;

use redis_module::raw;

use super::string::{Arg, RStr};

/// How many names are kept at most; past it, all are dropped and the cache
/// starts again (a queue's own names come back on its next call).
const MAX_NAMES: usize = 4096;

/// A kept name: its string and the string's own bytes (read once).
type Names = HashMap<Box<[u8]>, (*mut raw::RedisModuleString, *const u8, usize)>;

thread_local! {
    // Commands, their callbacks and timers all run on the server's main
    // thread. Never dropped by a thread-local destructor (which would lose
    // the strings without freeing them, at the server's exit); emptied only
    // by `release_all`, at unload.
    static NAMES: RefCell<ManuallyDrop<Names>> = RefCell::new(ManuallyDrop::new(HashMap::default()));
}

/// The key name `bytes`, as a string the caller owns a reference to, and
/// that string's own bytes (alive as long as the reference is).
pub(super) fn name<'a>(bytes: &[u8]) -> (RStr, &'a [u8]) {
    NAMES.with(|names| {
        let mut names = names.borrow_mut();
        let (ptr, at, len) = match names.get(bytes) {
            Some(&kept) => kept,
            None => make(&mut names, bytes),
        };
        // Under no auto memory (this module never enables it) with no
        // context: a plain reference count.
        // SAFETY: a kept string, alive while the table holds it; the caller's RStr releases this reference.
        unsafe { api!(RedisModule_RetainString)(ptr::null_mut(), ptr) };
        // SAFETY: the string's own bytes, alive while the caller's reference is.
        (RStr { ptr }, unsafe { std::slice::from_raw_parts(at, len) })
    })
}

/// Makes and keeps the name `bytes`. Out of line: most asks find their
/// name kept, and the code of a miss would only spread the hit's.
#[cold]
#[inline(never)]
fn make(names: &mut Names, bytes: &[u8]) -> (*mut raw::RedisModuleString, *const u8, usize) {
    if names.len() >= MAX_NAMES {
        release(names);
    }
    // SAFETY: a NULL context makes a string owned by no context; the bytes are read for their length.
    let ptr = unsafe {
        api!(RedisModule_CreateString)(ptr::null_mut(), bytes.as_ptr().cast::<c_char>(), bytes.len())
    };
    let mut len = 0usize;
    // SAFETY: a string just made; its bytes never change.
    let at = unsafe { api!(RedisModule_StringPtrLen)(ptr, &mut len) }.cast::<u8>();
    names.insert(bytes.into(), (ptr, at, len));
    (ptr, at, len)
}

fn release(names: &mut Names) {
    for (_, (ptr, _, _)) in names.drain() {
        // SAFETY: strings the table made, each freed once (drained).
        unsafe { api!(RedisModule_FreeString)(ptr::null_mut(), ptr) };
    }
}

/// Drops every kept name (at module unload).
pub fn release_all() {
    NAMES.with(|names| {
        let mut names = names.borrow_mut();
        release(&mut names);
        // The table's own memory too: an unloaded module keeps nothing.
        drop(std::mem::take(&mut **names));
    });
    SETS.with(|sets| drop(std::mem::take(&mut **sets.borrow_mut())));
}

/// A kept name of a [`NameSet`]: its string, and its bytes (read once, when
/// it was made; a string never changes).
struct Kept {
    ptr: *mut raw::RedisModuleString,
    bytes: *const u8,
    len: usize,
}

/// The names of one prefix's fixed keys (the prefix followed by each of a
/// table of suffixes), made once and kept between calls: a command finds
/// them all with one lookup of its prefix.
pub struct NameSet {
    names: Box<[Kept]>,
}

/// One name of a [`NameSet`], borrowed from it.
#[derive(Clone, Copy)]
pub struct KeyName<'a> {
    pub(super) ptr: *mut raw::RedisModuleString,
    pub(super) bytes: &'a [u8],
}

impl NameSet {
    fn new(prefix: &[u8], suffixes: &[&[u8]]) -> NameSet {
        let names = suffixes
            .iter()
            .map(|suffix| {
                // SAFETY: a NULL context makes a string owned by no context; the bytes are read for their length.
                let ptr = super::string::with_joined(&[prefix, suffix], |bytes| unsafe {
                    api!(RedisModule_CreateString)(
                        ptr::null_mut(),
                        bytes.as_ptr().cast::<c_char>(),
                        bytes.len(),
                    )
                });
                let mut len = 0usize;
                // SAFETY: a string just made, alive as long as the set.
                let bytes = unsafe { api!(RedisModule_StringPtrLen)(ptr, &mut len) }.cast::<u8>();
                Kept { ptr, bytes, len }
            })
            .collect();
        NameSet { names }
    }

    /// The name of suffix `i` of the table the set was made with.
    pub fn get(&self, i: usize) -> KeyName<'_> {
        let kept = &self.names[i];
        KeyName {
            ptr: kept.ptr,
            // SAFETY: the string lives as long as the set, and never changes.
            bytes: unsafe { std::slice::from_raw_parts(kept.bytes, kept.len) },
        }
    }
}

impl Drop for NameSet {
    fn drop(&mut self) {
        for kept in self.names.iter() {
            // SAFETY: strings the set made, each freed once.
            unsafe { api!(RedisModule_FreeString)(ptr::null_mut(), kept.ptr) };
        }
    }
}

impl<'a> KeyName<'a> {
    pub fn bytes(&self) -> &'a [u8] {
        self.bytes
    }

    pub fn as_arg(&self) -> Arg<'a> {
        Arg::borrowed(self.ptr)
    }
}

/// How many prefixes' name sets are kept at most (past it, all are dropped;
/// a set in use lives on until its call ends).
const MAX_SETS: usize = 1024;

type Sets = HashMap<Box<[u8]>, Rc<NameSet>>;

thread_local! {
    // As NAMES: never dropped by a thread-local destructor.
    static SETS: RefCell<ManuallyDrop<Sets>> = RefCell::new(ManuallyDrop::new(HashMap::default()));
}

/// The names `prefix` followed by each of `suffixes` (a fixed table: the
/// same for every call), kept between calls.
pub fn name_set(prefix: &[u8], suffixes: &'static [&'static [u8]]) -> Rc<NameSet> {
    SETS.with(|sets| {
        let mut sets = sets.borrow_mut();
        match sets.get(prefix) {
            Some(set) => Rc::clone(set),
            None => make_set(&mut sets, prefix, suffixes),
        }
    })
}

/// Makes and keeps `prefix`'s name set; out of line, as [`make`].
#[cold]
#[inline(never)]
fn make_set(sets: &mut Sets, prefix: &[u8], suffixes: &'static [&'static [u8]]) -> Rc<NameSet> {
    if sets.len() >= MAX_SETS {
        sets.clear();
    }
    let set = Rc::new(NameSet::new(prefix, suffixes));
    sets.insert(prefix.into(), Rc::clone(&set));
    set
}
