//! The context of one command (or one blocked-client or timer callback):
//! strings, the clock, what the server is doing, the log, keyspace
//! notifications, replication, and the calls the key API has no equivalent
//! for. Keys are opened through it (`key.rs`), under its ACL guard (`acl.rs`).

use std::ffi::{CStr, CString};
use std::os::raw::{c_char, c_int};
use std::ptr;
use std::sync::atomic::Ordering;

use redis_module::raw;

use super::acl::Guard;
use super::api::{CLUSTER, SCORES_AS_17G};
use super::key::KeyCache;
use super::string::{Arg, RStr};
use crate::errors::Error;

/// The command's context. Made only by the boundary (`boundary.rs`) and the
/// callbacks of `block.rs`, around the pointer the server passed.
pub struct Ctx {
    pub(super) ptr: *mut raw::RedisModuleCtx,
    pub(super) keys: KeyCache,
    pub(super) guard: Guard,
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
        }
    }

    // ---- strings ----

    pub fn string(&self, bytes: &[u8]) -> RStr {
        let ptr =
            unsafe { api!(RedisModule_CreateString)(self.ptr, bytes.as_ptr().cast::<c_char>(), bytes.len()) };
        RStr { ptr }
    }

    /// The pieces joined into one string (on the stack when short: key
    /// names are built on every call).
    pub fn string_of(&self, parts: &[&[u8]]) -> RStr {
        with_joined(parts, |bytes| self.string(bytes))
    }

    pub fn string_from_i64(&self, v: i64) -> RStr {
        RStr {
            ptr: unsafe { api!(RedisModule_CreateStringFromLongLong)(self.ptr, v) },
        }
    }

    /// `RM_CreateStringFromDouble`: the server's own formatting of a double.
    pub fn string_from_double(&self, v: f64) -> RStr {
        RStr {
            ptr: unsafe { api!(RedisModule_CreateStringFromDouble)(self.ptr, v) },
        }
    }

    /// Whether this server replies zset scores with `%.17g` while its
    /// `RM_CreateStringFromDouble` prints otherwise (Redis before 7.2).
    pub fn scores_print_17g(&self) -> bool {
        SCORES_AS_17G.load(Ordering::Relaxed)
    }

    // ---- the server's state ----

    fn flags(&self) -> c_int {
        unsafe { api!(RedisModule_GetContextFlags)(self.ptr) }
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
        unsafe { raw::RedisModule_AvoidReplicaTraffic.is_some_and(|f| f() != 0) }
    }

    /// The server clock in ms: the cached command time where the server has
    /// it (what Lua's `TIME` sees in the same call), else the wall clock.
    pub fn now_ms(&self) -> i64 {
        unsafe {
            match raw::RedisModule_CachedMicroseconds {
                Some(cached) => cached() / 1000,
                None => api!(RedisModule_Milliseconds)(),
            }
        }
    }

    /// The database the context works on.
    pub fn db(&self) -> i32 {
        unsafe { api!(RedisModule_GetSelectedDb)(self.ptr) }
    }

    /// Switches to database `db`, closing every key opened so far (`&mut`:
    /// no key handle can be alive across the switch).
    pub fn select_db(&mut self, db: i32) -> bool {
        self.keys.close_all(self.ptr);
        unsafe { api!(RedisModule_SelectDb)(self.ptr, db) == raw::REDISMODULE_OK as c_int }
    }

    // ---- the log ----

    /// A warning in the server's log.
    pub fn warn(&self, msg: &str) {
        warn(self.ptr, msg);
    }

    // ---- keyspace notifications (the key API fires none itself) ----

    pub fn notify(&self, class: Class, event: &CStr, name: Arg) {
        unsafe { api!(RedisModule_NotifyKeyspaceEvent)(self.ptr, class as c_int, event.as_ptr(), name.ptr) };
    }

    /// Wakes clients blocked on `key`.
    pub fn signal_ready(&self, key: Arg) {
        unsafe { api!(RedisModule_SignalKeyAsReady)(self.ptr, key.ptr) };
    }

    // ---- replication ----

    /// Sends `cmd args…` to replicas and the AOF (several calls in one
    /// command reach them wrapped in MULTI/EXEC, in call order).
    pub fn replicate(&self, cmd: &CStr, args: &[Arg]) {
        // Up to 18 arguments (a batch of 8: a turn's HSET has 17, ENQUEUE's
        // ZADD NX 18) go as one `s` each: the server sizes its argv from the
        // format, where a `v` vector makes it grow that argv again (a second
        // allocation per call).
        const ESSES: &[u8; 19] = b"ssssssssssssssssss\0";
        let f = unsafe { api!(RedisModule_Replicate) };
        let (ctx, cmd) = (self.ptr, cmd.as_ptr());
        let a = |i: usize| args[i].ptr;
        macro_rules! fixed {
            ($($i:literal)+) => {{
                let fmt = ESSES[ESSES.len() - 1 - args.len()..].as_ptr() as *const c_char;
                unsafe { f(ctx, cmd, fmt, $(a($i)),+) }
            }};
        }
        match args.len() {
            1 => fixed!(0),
            2 => fixed!(0 1),
            3 => fixed!(0 1 2),
            4 => fixed!(0 1 2 3),
            5 => fixed!(0 1 2 3 4),
            6 => fixed!(0 1 2 3 4 5),
            7 => fixed!(0 1 2 3 4 5 6),
            8 => fixed!(0 1 2 3 4 5 6 7),
            9 => fixed!(0 1 2 3 4 5 6 7 8),
            10 => fixed!(0 1 2 3 4 5 6 7 8 9),
            11 => fixed!(0 1 2 3 4 5 6 7 8 9 10),
            12 => fixed!(0 1 2 3 4 5 6 7 8 9 10 11),
            13 => fixed!(0 1 2 3 4 5 6 7 8 9 10 11 12),
            14 => fixed!(0 1 2 3 4 5 6 7 8 9 10 11 12 13),
            15 => fixed!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14),
            16 => fixed!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15),
            17 => fixed!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16),
            18 => fixed!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17),
            _ => {
                let mut raw_args: Vec<*mut raw::RedisModuleString> = args.iter().map(|a| a.ptr).collect();
                unsafe { f(ctx, cmd, c"v".as_ptr(), raw_args.as_mut_ptr(), raw_args.len()) }
            }
        };
    }

    /// Replicates `cmd a b n1 n2 n3`: two strings and three integers, the
    /// integers made into strings by the server (no strings to build here).
    pub fn replicate_sslll(&self, cmd: &CStr, a: Arg, b: Arg, n: [i64; 3]) {
        unsafe {
            api!(RedisModule_Replicate)(
                self.ptr,
                cmd.as_ptr(),
                c"sslll".as_ptr(),
                a.ptr,
                b.ptr,
                n[0],
                n[1],
                n[2],
            );
        }
    }

    /// Replicates the running command as the client sent it.
    pub fn replicate_verbatim(&self) {
        unsafe { api!(RedisModule_ReplicateVerbatim)(self.ptr) };
    }

    // ---- calls the key API has no equivalent for. Each checks the caller's
    // permission on the key it names, as opening it would. A call that
    // writes (SADD, SREM) may only name a key no handle of this context has
    // open: a handle would go stale under it. ----

    /// `SISMEMBER`, `SADD` or `SREM` on a set key: the integer reply, or
    /// `WRONGTYPE` when the key holds another type.
    pub fn set_call(&self, cmd: &CStr, key: Arg, member: Arg) -> Result<i64, Error> {
        assert!(
            !self.keys.is_open(key.bytes()),
            "a call on a key this context has open"
        );
        self.int_call(cmd, &[key, member])
    }

    /// A read-only call with an integer reply on the key `args[0]` (`SCARD
    /// key`, `ZCOUNT key min max`), or `set_call`'s; `WRONGTYPE` for any other
    /// reply (the one error these calls give).
    pub fn int_call(&self, cmd: &CStr, args: &[Arg]) -> Result<i64, Error> {
        if let Some(&key) = args.first() {
            self.guard.check(self, key)?;
        }
        let mut argv: smallvec::SmallVec<[*mut raw::RedisModuleString; 4]> =
            args.iter().map(|a| a.ptr).collect();
        let reply = self.call_argv(cmd, &mut argv)?;
        unsafe {
            let kind = api!(RedisModule_CallReplyType)(reply);
            let result = if kind == raw::REDISMODULE_REPLY_INTEGER as c_int {
                Ok(api!(RedisModule_CallReplyInteger)(reply))
            } else {
                Err(Error::WrongType)
            };
            api!(RedisModule_FreeCallReply)(reply);
            result
        }
    }

    /// Whether a key exists, without touching it.
    pub fn key_exists(&self, name: Arg) -> bool {
        unsafe { api!(RedisModule_KeyExists)(self.ptr, name.ptr) != 0 }
    }

    /// One step of `SCAN cursor MATCH pattern COUNT count` (no `key`), or of
    /// `HSCAN`/`SSCAN key cursor COUNT count`: the next cursor and the
    /// elements (for HSCAN, fields and values alternating). Read-only calls:
    /// a handle open on `key` stays valid.
    pub fn scan_step(
        &self,
        cmd: &CStr,
        key: Option<Arg>,
        cursor: u64,
        pattern: Option<&[u8]>,
        count: u64,
    ) -> Result<(u64, Vec<RStr>), Error> {
        if let Some(key) = key {
            self.guard.check(self, key)?;
        }
        let cursor = self.string(cursor.to_string().as_bytes());
        let count = self.string(count.to_string().as_bytes());
        let mut argv: Vec<*mut raw::RedisModuleString> = Vec::with_capacity(6);
        let match_word;
        let pattern_str;
        if let Some(key) = key {
            argv.push(key.ptr);
        }
        argv.push(cursor.ptr);
        if let Some(pattern) = pattern {
            match_word = self.string(b"MATCH");
            pattern_str = self.string(pattern);
            argv.extend([match_word.ptr, pattern_str.ptr]);
        }
        let count_word = self.string(b"COUNT");
        argv.extend([count_word.ptr, count.ptr]);
        let reply = self.call_argv(cmd, &mut argv)?;
        unsafe {
            let result = read_scan_reply(self.ptr, reply);
            api!(RedisModule_FreeCallReply)(reply);
            result.ok_or(Error::WrongType)
        }
    }

    /// `RM_Call(cmd, argv…)`: the reply, which the caller frees.
    fn call_argv(
        &self,
        cmd: &CStr,
        argv: &mut [*mut raw::RedisModuleString],
    ) -> Result<*mut raw::RedisModuleCallReply, Error> {
        let reply = unsafe {
            api!(RedisModule_Call)(
                self.ptr,
                cmd.as_ptr(),
                c"v".as_ptr(),
                argv.as_mut_ptr(),
                argv.len(),
            )
        };
        if reply.is_null() {
            Err(Error::Internal)
        } else {
            Ok(reply)
        }
    }

    /// `ZCOUNT key min max` (O(log N)), 0 when the key is missing.
    pub fn zcount(&self, key: Arg, min: &[u8], max: &[u8]) -> Result<i64, Error> {
        let (min, max) = (self.string(min), self.string(max));
        self.int_call(c"ZCOUNT", &[key, min.as_arg(), max.as_arg()])
    }
}

unsafe fn read_scan_reply(
    ctx: *mut raw::RedisModuleCtx,
    reply: *mut raw::RedisModuleCallReply,
) -> Option<(u64, Vec<RStr>)> {
    if api!(RedisModule_CallReplyType)(reply) != raw::REDISMODULE_REPLY_ARRAY as c_int
        || api!(RedisModule_CallReplyLength)(reply) != 2
    {
        return None;
    }
    let text = |r: *mut raw::RedisModuleCallReply| -> Option<Vec<u8>> {
        let mut len = 0usize;
        let p = api!(RedisModule_CallReplyStringPtr)(r, &mut len);
        (!p.is_null()).then(|| std::slice::from_raw_parts(p.cast::<u8>(), len).to_vec())
    };
    let next = text(api!(RedisModule_CallReplyArrayElement)(reply, 0))?;
    let next: u64 = std::str::from_utf8(&next).ok()?.parse().ok()?;
    let keys = api!(RedisModule_CallReplyArrayElement)(reply, 1);
    let n = api!(RedisModule_CallReplyLength)(keys);
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let bytes = text(api!(RedisModule_CallReplyArrayElement)(keys, i))?;
        let ptr = api!(RedisModule_CreateString)(ctx, bytes.as_ptr().cast::<c_char>(), bytes.len());
        out.push(RStr { ptr });
    }
    Some((next, out))
}

impl Drop for Ctx {
    fn drop(&mut self) {
        self.keys.close_all(self.ptr);
        self.guard.release();
    }
}

/// `parts` joined, on the stack when short.
pub(super) fn with_joined<T>(parts: &[&[u8]], f: impl FnOnce(&[u8]) -> T) -> T {
    let len: usize = parts.iter().map(|p| p.len()).sum();
    let mut stack = [0u8; 256];
    let mut heap = Vec::new();
    let buf: &mut [u8] = if len <= stack.len() {
        &mut stack[..len]
    } else {
        heap.resize(len, 0);
        &mut heap
    };
    let mut at = 0;
    for part in parts {
        buf[at..at + part.len()].copy_from_slice(part);
        at += part.len();
    }
    f(buf)
}

/// Writes `msg` to the server's log as a warning (`ctx` may be NULL: the
/// module's name then does not prefix the line).
fn warn(ctx: *mut raw::RedisModuleCtx, msg: &str) {
    let text = CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
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

/// `%.17g`, as libc prints it (what Redis 7.0's `ZSCORE` replies).
pub fn format_17g(score: f64) -> Vec<u8> {
    let mut buf = [0u8; 64];
    let n = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), c"%.17g".as_ptr(), score) };
    buf[..(n.max(0) as usize).min(buf.len() - 1)].to_vec()
}

#[cfg(test)]
mod tests {
    use super::{format_17g, with_joined};

    #[test]
    fn seventeen_significant_digits_as_libc_prints_them() {
        assert_eq!(format_17g(1e17), b"1e+17");
        assert_eq!(format_17g(1.1), b"1.1000000000000001");
        assert_eq!(format_17g(42.0), b"42");
    }

    #[test]
    fn joined_on_the_stack_or_the_heap() {
        assert_eq!(with_joined(&[b"a", b"bc"], |b| b.to_vec()), b"abc");
        let long = vec![b'x'; 300];
        assert_eq!(with_joined(&[&long, b"y"], |b| b.len()), 301);
    }
}
