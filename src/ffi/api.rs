//! Calling the server's API: the function pointers it exported at load, what
//! it is (read once at load), and the constant strings kept for replication.

use std::os::raw::{c_char, c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use redis_module::raw;

/// Calls an API function the server exported at load. `init` refuses to load
/// when one of those [`missing_api`] lists is missing, so the `None` arm is
/// unreachable in a loaded module; it panics (caught at the boundary) rather
/// than aborting the server.
macro_rules! api {
    ($name:ident) => {
        match redis_module::raw::$name {
            Some(f) => f,
            None => panic!(concat!("server API ", stringify!($name), " is missing")),
        }
    };
}

/// The first API function the commands call that this server did not export.
pub fn missing_api() -> Option<&'static str> {
    macro_rules! check {
        ($($name:ident),*) => {
            $( if unsafe { raw::$name }.is_none() { return Some(stringify!($name)); } )*
        };
    }
    check!(
        RedisModule_OpenKey,
        RedisModule_CloseKey,
        RedisModule_KeyType,
        RedisModule_KeyExists,
        RedisModule_ValueLength,
        RedisModule_ListPush,
        RedisModule_ListPop,
        RedisModule_ListGet,
        RedisModule_ListDelete,
        RedisModule_ZsetAdd,
        RedisModule_ZsetRem,
        RedisModule_ZsetScore,
        RedisModule_ZsetFirstInScoreRange,
        RedisModule_ZsetRangeCurrentElement,
        RedisModule_ZsetRangeNext,
        RedisModule_ZsetRangeEndReached,
        RedisModule_ZsetRangeStop,
        RedisModule_HashGet,
        RedisModule_HashSet,
        RedisModule_CreateString,
        RedisModule_CreateStringFromDouble,
        RedisModule_CreateStringFromLongLong,
        RedisModule_FreeString,
        RedisModule_RetainString,
        RedisModule_StringPtrLen,
        RedisModule_StringToDouble,
        RedisModule_ReplyWithArray,
        RedisModule_ReplyWithEmptyArray,
        RedisModule_ReplyWithNullArray,
        RedisModule_ReplyWithString,
        RedisModule_ReplyWithStringBuffer,
        RedisModule_ReplyWithLongLong,
        RedisModule_ReplyWithSimpleString,
        RedisModule_ReplyWithError,
        RedisModule_ReplyWithNull,
        RedisModule_ReplyWithMap,
        RedisModule_WrongArity,
        RedisModule_Replicate,
        RedisModule_ReplicateVerbatim,
        RedisModule_SignalModifiedKey,
        RedisModule_SetModuleOptions,
        RedisModule_GetContextFlags,
        RedisModule_NotifyKeyspaceEvent,
        RedisModule_BlockClientOnKeys,
        RedisModule_SignalKeyAsReady,
        RedisModule_Milliseconds,
        RedisModule_Call,
        RedisModule_CallReplyType,
        RedisModule_CallReplyInteger,
        RedisModule_CallReplyStringPtr,
        RedisModule_CallReplyLength,
        RedisModule_CallReplyArrayElement,
        RedisModule_FreeCallReply,
        RedisModule_GetClientId,
        RedisModule_GetSelectedDb,
        RedisModule_SelectDb,
        RedisModule_CreateTimer,
        RedisModule_StopTimer,
        RedisModule_Log
    );
    None
}

/// Redis before 7.2 replies zset scores with `%.17g` (`ZSCORE` of 1e17 is
/// "1e+17"), while its `RM_CreateStringFromDouble` prints integers plainly;
/// newer servers (and Valkey) use one formatter for both.
pub(super) static SCORES_AS_17G: AtomicBool = AtomicBool::new(false);

pub(super) static CLUSTER: AtomicBool = AtomicBool::new(false);

/// Valkey's `ACLCheckKeyPrefixPermissions(user, prefix, len, flags)`, where
/// the server has it (Valkey 8.1+; Redis's function of that name takes other
/// arguments, so it is looked up under the Valkey name only).
pub(super) type PrefixCheck =
    unsafe extern "C" fn(*mut raw::RedisModuleUser, *const c_char, usize, u32) -> c_int;
pub(super) static PREFIX_CHECK: AtomicPtr<c_void> = AtomicPtr::new(ptr::null_mut());

/// Constant arguments for replication, made once at load and kept.
#[derive(Debug, Clone, Copy)]
pub enum Word {
    Left,
    Right,
    Nx,
    Zero,
}

const WORD_TEXT: [&[u8]; 4] = [b"LEFT", b"RIGHT", b"NX", b"0"];
pub(super) static WORDS: [AtomicPtr<raw::RedisModuleString>; 4] =
    [const { AtomicPtr::new(ptr::null_mut()) }; 4];

/// Reads, once at load, what the server is: cluster mode, how it formats
/// zset scores, whether it checks key prefixes; makes the constant words.
pub fn detect_server(ctx: &redis_module::Context) {
    let ctx = ctx.ctx;
    unsafe {
        let flags = raw::RedisModule_GetContextFlags.map_or(0, |f| f(ctx));
        CLUSTER.store(
            flags & raw::REDISMODULE_CTX_FLAGS_CLUSTER as c_int != 0,
            Ordering::Relaxed,
        );
        for (slot, text) in WORDS.iter().zip(WORD_TEXT) {
            let s =
                api!(RedisModule_CreateString)(ptr::null_mut(), text.as_ptr().cast::<c_char>(), text.len());
            slot.store(s, Ordering::Relaxed);
        }
        // 0x00MMmmpp; Valkey reports a Redis-compatible 7.2.4.
        let version = raw::RedisModule_GetServerVersion.map_or(0, |f| f());
        SCORES_AS_17G.store(version != 0 && version < 0x0007_0200, Ordering::Relaxed);
        let mut check: *mut c_void = ptr::null_mut();
        if let Some(get_api) = raw::RedisModule_GetApi {
            let name = c"ValkeyModule_ACLCheckKeyPrefixPermissions";
            if get_api(name.as_ptr(), (&mut check as *mut *mut c_void).cast()) != raw::REDISMODULE_OK as c_int
            {
                check = ptr::null_mut();
            }
        }
        PREFIX_CHECK.store(check, Ordering::Relaxed);
    }
}

/// Frees the constant words (at module unload).
pub fn release_constants() {
    for slot in &WORDS {
        let s = slot.swap(ptr::null_mut(), Ordering::Relaxed);
        if !s.is_null() {
            unsafe { api!(RedisModule_FreeString)(ptr::null_mut(), s) };
        }
    }
}

/// Module options: the module signals a key modified itself, and only when
/// it wrote the key (see `key.rs`).
pub fn set_module_options(ctx: &redis_module::Context) {
    let ctx = ctx.ctx;
    let options = raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as c_int;
    unsafe { api!(RedisModule_SetModuleOptions)(ctx, options) };
}
