//! The context of one command (or one blocked-client or timer callback):
//! strings, the clock, what the server is doing, the log, keyspace
//! notifications and wake-ups. Keys are opened through it (`key.rs`), under
//! its ACL guard (`acl.rs`); it replicates (`propagate.rs`) and calls
//! (`call.rs`).

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use smallvec::SmallVec;
use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::ptr;
use std::sync::atomic::Ordering;

use redis_module::raw;

use super::api::CLUSTER;
use super::guard::Guard;
use super::names::NameSet;
use super::slots::KeyCache;
use super::string::{Arg, RStr};

/// The command's context. Made only by the boundary (`boundary.rs`) and the
/// callbacks of `block.rs`, around the pointer the server passed.
pub struct Ctx {
    pub(super) ptr: *mut raw::RedisModuleCtx,
    pub(super) keys: KeyCache,
    pub(super) guard: Guard,
    /// The server's flags for this context, read once: what it says (a
    /// replayed call, MULTI, a primary) holds for the whole callback.
    flags: Cell<Option<c_int>>,
    /// The server's cached command time (µs), read once: the server sets it
    /// before the callback and it holds for the whole of it (servers
    /// without it, Redis 7.0, read the wall clock each time).
    now_us: Cell<Option<i64>>,
    /// The selected database, read once (only `select_db` changes it).
    db: Cell<Option<i32>>,
    /// The name sets whose names key slots use without a reference of
    /// their own (`key.rs`): held until the keys are closed.
    held: RefCell<SmallVec<[Rc<NameSet>; 1]>>,
}

/// Keyspace-notification classes.
#[derive(Debug, Clone, Copy)]
pub enum Class {
    Generic = raw::REDISMODULE_NOTIFY_GENERIC as isize,
    List = raw::REDISMODULE_NOTIFY_LIST as isize,
    Hash = raw::REDISMODULE_NOTIFY_HASH as isize,
    Zset = raw::REDISMODULE_NOTIFY_ZSET as isize,
}

impl Ctx {
    /// `writable`: keys are opened for writing (the command is a write
    /// command); else for reading only.
    pub(super) fn new(ptr: *mut raw::RedisModuleCtx, writable: bool) -> Ctx {
        Ctx {
            ptr,
            keys: KeyCache::new(writable),
            guard: Guard::default(),
            flags: Cell::new(None),
            now_us: Cell::new(None),
            db: Cell::new(None),
            held: RefCell::new(SmallVec::new()),
        }
    }

    /// Holds `set` until the context's keys are closed: the slots of keys
    /// [`Ctx::key_by`] opened use its names.
    pub(super) fn hold(&self, set: &Rc<NameSet>) {
        // Only the last is looked at: a timer's context goes through many
        // queues, each once (a set held twice costs a pointer).
        let mut held = self.held.borrow_mut();
        if !held.last().is_some_and(|h| Rc::ptr_eq(h, set)) {
            held.push(Rc::clone(set));
        }
    }

    // ---- strings ----

    pub fn string(&self, bytes: &[u8]) -> RStr {
        // SAFETY: the bytes are read for the length given; the context is live.
        let ptr =
            unsafe { api!(RedisModule_CreateString)(self.ptr, bytes.as_ptr().cast::<c_char>(), bytes.len()) };
        RStr { ptr }
    }

    pub fn string_from_i64(&self, v: i64) -> RStr {
        // SAFETY: the context is live.
        RStr {
            // SAFETY: the context is live.
            ptr: unsafe { api!(RedisModule_CreateStringFromLongLong)(self.ptr, v) },
        }
    }

    // ---- the server's state ----

    fn flags(&self) -> c_int {
        if let Some(flags) = self.flags.get() {
            return flags;
        }
        // SAFETY: the context is live.
        let flags = unsafe { api!(RedisModule_GetContextFlags)(self.ptr) };
        self.flags.set(Some(flags));
        flags
    }

    fn any_flag(&self, flags: u32) -> bool {
        self.flags() & flags as c_int != 0
    }

    /// Cluster mode, read once at load (a server cannot change it while
    /// running).
    pub fn is_cluster(&self) -> bool {
        CLUSTER.load(Ordering::Relaxed)
    }

    /// Whether the caller may be blocked: not inside MULTI/EXEC or a script,
    /// and not a caller that denies blocking (another module's call without
    /// blocking allowed: the flag core `BLPOP` honours).
    pub fn may_block(&self) -> bool {
        !self.any_flag(
            raw::REDISMODULE_CTX_FLAGS_MULTI
                | raw::REDISMODULE_CTX_FLAGS_LUA
                | raw::REDISMODULE_CTX_FLAGS_DENY_BLOCKING,
        )
    }

    /// Whether this call comes from the primary's replication stream or an
    /// AOF being loaded (not from a client).
    pub fn replayed(&self) -> bool {
        self.any_flag(raw::REDISMODULE_CTX_FLAGS_REPLICATED | raw::REDISMODULE_CTX_FLAGS_LOADING)
    }

    /// Whether this server is a primary and not loading (what a timer that
    /// writes needs).
    pub fn is_primary_serving(&self) -> bool {
        let flags = self.flags();
        flags & raw::REDISMODULE_CTX_FLAGS_MASTER as c_int != 0
            && flags & raw::REDISMODULE_CTX_FLAGS_LOADING as c_int == 0
    }

    /// Whether the server asks modules not to write now: clients are paused
    /// for writes (`CLIENT PAUSE … WRITE`, a `FAILOVER` or a cluster's manual
    /// failover), so that a replica can catch up. A write then (from a
    /// timer) aborts the server when the AOF is on or a replica attached.
    pub fn writes_paused(&self) -> bool {
        // SAFETY: a call without arguments, looked up at load.
        unsafe { raw::RedisModule_AvoidReplicaTraffic.is_some_and(|f| f() != 0) }
    }

    /// The server clock in ms: the cached command time where the server has
    /// it (what Lua's `TIME` sees in the same call), else the wall clock.
    pub fn now_ms(&self) -> i64 {
        if let Some(us) = self.now_us.get() {
            return us / 1000;
        }
        // SAFETY: calls without arguments, looked up at load.
        unsafe {
            match raw::RedisModule_CachedMicroseconds {
                Some(cached) => {
                    let us = cached();
                    self.now_us.set(Some(us));
                    us / 1000
                }
                // The wall clock moves during the call: read each time.
                None => api!(RedisModule_Milliseconds)(),
            }
        }
    }

    /// The database the context works on.
    pub fn db(&self) -> i32 {
        if let Some(db) = self.db.get() {
            return db;
        }
        // SAFETY: the context is live.
        let db = unsafe { api!(RedisModule_GetSelectedDb)(self.ptr) };
        self.db.set(Some(db));
        db
    }

    /// Switches to database `db`, closing every key opened so far (`&mut`:
    /// no key handle can be alive across the switch).
    pub fn select_db(&mut self, db: i32) -> bool {
        self.keys.close_all(self.ptr);
        self.db.set(None);
        // SAFETY: the context is live and holds no open key.
        unsafe { api!(RedisModule_SelectDb)(self.ptr, db) == raw::REDISMODULE_OK as c_int }
    }

    // ---- the log ----

    /// A warning in the server's log.
    pub fn warn(&self, msg: &str) {
        warn(self.ptr, msg);
    }

    // ---- keyspace notifications (the key API fires none itself) ----

    pub fn notify(&self, class: Class, event: &CStr, name: Arg) {
        // SAFETY: a live context, a NUL-ended event name and a live string.
        unsafe { api!(RedisModule_NotifyKeyspaceEvent)(self.ptr, class as c_int, event.as_ptr(), name.ptr) };
    }

    /// `PUBLISH channel message` on this server (a replica publishes what
    /// its primary sends it).
    pub fn publish(&self, channel: Arg, message: Arg) {
        // SAFETY: a live context and strings.
        unsafe { api!(RedisModule_PublishMessage)(self.ptr, channel.ptr, message.ptr) };
    }

    /// Wakes clients blocked on `key` (module waiters and core ones alike).
    pub fn signal_ready(&self, key: Arg) {
        // SAFETY: a live context and string.
        unsafe { api!(RedisModule_SignalKeyAsReady)(self.ptr, key.ptr) };
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        self.keys.close_all(self.ptr);
        self.guard.release();
    }
}

/// Writes `msg` to the server's log as a warning (`ctx` may be NULL: the
/// module's name then does not prefix the line).
fn warn(ctx: *mut raw::RedisModuleCtx, msg: &str) {
    let text = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    // SAFETY: NUL-ended strings; a NULL context is allowed by the API.
    unsafe {
        if let Some(log) = raw::RedisModule_Log {
            log(ctx, c"warning".as_ptr(), c"%s".as_ptr(), text.as_ptr());
        }
    }
}

/// Writes a warning to the server's log from where no context is at hand
/// (the panic hook).
pub fn log_warning(msg: &str) {
    warn(ptr::null_mut(), msg);
}
