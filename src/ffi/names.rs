//! Key names, kept between calls: a claim opens the same seven or so keys
//! every time, and making each name a new string is a tenth of a claim's
//! cost. Every name made is kept (up to a bound, then the lot is dropped)
//! and handed out as one more reference to the same string.

use std::cell::RefCell;
use std::mem::ManuallyDrop;

use rustc_hash::FxHashMap as HashMap;
use std::os::raw::c_char;
use std::ptr;

use redis_module::raw;

use super::string::RStr;

/// How many names are kept at most; past it, all are dropped and the cache
/// starts again (a queue's own names come back on its next call).
const MAX_NAMES: usize = 4096;

type Names = HashMap<Box<[u8]>, *mut raw::RedisModuleString>;

thread_local! {
    // Commands, their callbacks and timers all run on the server's main
    // thread. Never dropped by a thread-local destructor (which would lose
    // the strings without freeing them, at the server's exit); emptied only
    // by `release_all`, at unload.
    static NAMES: RefCell<ManuallyDrop<Names>> = RefCell::new(ManuallyDrop::new(HashMap::default()));
}

/// The key name `bytes`, as a string the caller owns a reference to.
pub(super) fn name(bytes: &[u8]) -> RStr {
    NAMES.with(|names| {
        let mut names = names.borrow_mut();
        let ptr = match names.get(bytes) {
            Some(&ptr) => ptr,
            None => {
                if names.len() >= MAX_NAMES {
                    release(&mut names);
                }
                let ptr = unsafe {
                    api!(RedisModule_CreateString)(
                        ptr::null_mut(),
                        bytes.as_ptr().cast::<c_char>(),
                        bytes.len(),
                    )
                };
                names.insert(bytes.into(), ptr);
                ptr
            }
        };
        // Under no auto memory (this module never enables it) with no
        // context: a plain reference count.
        unsafe { api!(RedisModule_RetainString)(ptr::null_mut(), ptr) };
        RStr {
            ptr,
            ctx: ptr::null_mut(),
        }
    })
}

fn release(names: &mut Names) {
    for (_, ptr) in names.drain() {
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
}
