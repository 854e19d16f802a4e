//! The calls the key API has no equivalent for: set commands (the key API
//! has no set calls), key existence, SCAN-like walks and counts. Each checks
//! the caller's permission on the key it names, as opening it would. A call
//! that writes (SADD, SREM) may only name a key no handle of this context has
//! open: a handle would go stale under it.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int};

use redis_module::raw;

use super::ctx::Ctx;
use super::string::{Arg, RStr};
use crate::model::error::Error;

impl Ctx {
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
            self.guard.check(self.ptr, key)?;
        }
        let mut argv: smallvec::SmallVec<[*mut raw::RedisModuleString; 4]> =
            args.iter().map(|a| a.ptr).collect();
        let reply = self.call_argv(cmd, &mut argv)?;
        // SAFETY: a reply the call returned, read and freed once.
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
        // SAFETY: a live context and string.
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
            self.guard.check(self.ptr, key)?;
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
        // SAFETY: a reply the call returned, read and freed once.
        unsafe {
            let result = read_scan_reply(self.ptr, reply);
            api!(RedisModule_FreeCallReply)(reply);
            result.ok_or(Error::WrongType)
        }
    }

    /// A call with no key whose reply is a string (`CLUSTER NODES`): its
    /// text, or `None` for any other reply.
    pub fn text_call(&self, cmd: &CStr, args: &[&[u8]]) -> Option<Vec<u8>> {
        let args: Vec<RStr> = args.iter().map(|a| self.string(a)).collect();
        let mut argv: Vec<*mut raw::RedisModuleString> = args.iter().map(|a| a.ptr).collect();
        let reply = self.call_argv(cmd, &mut argv).ok()?;
        // SAFETY: a reply the call returned, read and freed once.
        unsafe {
            let mut len = 0usize;
            let text = (api!(RedisModule_CallReplyType)(reply) == raw::REDISMODULE_REPLY_STRING as c_int)
                .then(|| api!(RedisModule_CallReplyStringPtr)(reply, &mut len))
                .filter(|p| !p.is_null())
                .map(|p| std::slice::from_raw_parts(p.cast::<u8>(), len).to_vec());
            api!(RedisModule_FreeCallReply)(reply);
            text
        }
    }

    /// `RM_Call(cmd, argv…)`: the reply, which the caller frees.
    fn call_argv(
        &self,
        cmd: &CStr,
        argv: &mut [*mut raw::RedisModuleString],
    ) -> Result<*mut raw::RedisModuleCallReply, Error> {
        // `!AR`: replication stays allowed while the call runs, but the call
        // itself is sent to neither the AOF nor replicas (its effect, when it
        // writes, is the caller's to send). In a woken client's callback,
        // Redis 7.0 sends the effects made so far when a call ends; a plain
        // call disallows replication, so they were dropped, not sent
        // (docs/production.md, "Replication and persistence").
        // SAFETY: a live context, a NUL-ended name and a vector of live strings with its length, as `v` takes.
        let reply = unsafe {
            api!(RedisModule_Call)(
                self.ptr,
                cmd.as_ptr(),
                c"!ARv".as_ptr(),
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
