//! Hash reads and writes of a [`Key`] (`key.rs` opens it): a job row's
//! fields, several in one call.

use std::os::raw::{c_char, c_int};
use std::ptr;

use redis_module::raw;

use super::key::{Key, Kind};
use super::string::{Arg, RStr};

impl Key<'_> {
    pub fn hash_get(&self, field: Arg) -> Option<RStr> {
        if !self.is_open() || self.kind() != Kind::Hash {
            return None;
        }
        let mut out: *mut raw::RedisModuleString = ptr::null_mut();
        // SAFETY: an open hash key (checked above); `out` receives one string; NULL-ended.
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

    /// Several fields of a hash in one call (`HMGET`): the values in the
    /// order of `fields`, `None` where absent (all `None` for a missing key
    /// or another type).
    pub fn hash_get_many<const N: usize>(&self, fields: [Arg; N]) -> [Option<RStr>; N] {
        let mut out: [*mut raw::RedisModuleString; N] = [ptr::null_mut(); N];
        if N == 0 || N > 4 || !self.is_open() || self.kind() != Kind::Hash {
            return out.map(RStr::own);
        }
        let none = raw::REDISMODULE_HASH_NONE as c_int;
        // SAFETY: reading an API pointer the server exported at load.
        let get = unsafe { api!(RedisModule_HashGet) };
        let key = self.ptr();
        let end = ptr::null_mut::<c_char>();
        let f = |i: usize| fields[i].ptr;
        let [o0, o1, o2, o3] = {
            let mut slots: [*mut *mut raw::RedisModuleString; 4] = [ptr::null_mut(); 4];
            for (slot, o) in slots.iter_mut().zip(out.iter_mut()) {
                *slot = o;
            }
            slots
        };
        // SAFETY: an open hash key; each field is a live string and each out
        // pointer points into `out`; the list ends with NULL as the API wants.
        unsafe {
            match N {
                1 => get(key, none, f(0), o0, end),
                2 => get(key, none, f(0), o0, f(1), o1, end),
                3 => get(key, none, f(0), o0, f(1), o1, f(2), o2, end),
                _ => get(key, none, f(0), o0, f(1), o1, f(2), o2, f(3), o3, end),
            };
        }
        out.map(RStr::own)
    }

    /// Whether a hash has `field` (no copy of the value is made).
    pub fn hash_has(&self, field: Arg) -> bool {
        if !self.is_open() || self.kind() != Kind::Hash {
            return false;
        }
        let mut exists: c_int = 0;
        // SAFETY: an open hash key (checked above); `exists` receives a flag; NULL-ended.
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

    // ---- writes (on a write command only) ----

    /// Sets up to four fields in one call (`HSET key f v …`).
    pub fn hash_set_many(&self, pairs: &[(Arg, Arg)]) {
        assert!(!pairs.is_empty() && pairs.len() <= 4, "1 to 4 fields at once");
        self.wrote();
        // SAFETY: reading an API pointer the server exported at load.
        let set = unsafe { api!(RedisModule_HashSet) };
        let (key, none, end) = (
            self.ptr(),
            raw::REDISMODULE_HASH_NONE as c_int,
            ptr::null_mut::<c_char>(),
        );
        let p = |i: usize| (pairs[i].0.ptr, pairs[i].1.ptr);
        // SAFETY: an open key opened for writing; live strings; NULL-ended.
        unsafe {
            match pairs.len() {
                1 => set(key, none, p(0).0, p(0).1, end),
                2 => set(key, none, p(0).0, p(0).1, p(1).0, p(1).1, end),
                3 => set(key, none, p(0).0, p(0).1, p(1).0, p(1).1, p(2).0, p(2).1, end),
                _ => set(
                    key,
                    none,
                    p(0).0,
                    p(0).1,
                    p(1).0,
                    p(1).1,
                    p(2).0,
                    p(2).1,
                    p(3).0,
                    p(3).1,
                    end,
                ),
            };
        }
    }

    /// Whether it was there: the server counts the fields it deleted, so
    /// the field is looked for once.
    pub fn hash_del(&self, field: Arg) -> bool {
        // The server would make a missing key (an empty hash) to delete from.
        if !self.is_open() || self.kind() != Kind::Hash {
            return false;
        }
        // REDISMODULE_HASH_DELETE, which bindgen does not emit: the address 1.
        let delete: *mut raw::RedisModuleString = ptr::without_provenance_mut(1);
        self.wrote_if(|| {
            // SAFETY: an open hash key opened for writing (checked by
            // `wrote_if`); the value 1 is REDISMODULE_HASH_DELETE; NULL-ended.
            let deleted = unsafe {
                api!(RedisModule_HashSet)(
                    self.ptr(),
                    raw::REDISMODULE_HASH_NONE as c_int,
                    field.ptr,
                    delete,
                    ptr::null_mut::<c_char>(),
                )
            };
            deleted > 0
        })
    }
}
