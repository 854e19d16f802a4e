//! Calling the server's API: the function pointers it exported at load, what
//! it is (read once at load), and the constant strings kept for replication.

use std::os::raw::{c_char, c_int, c_void};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use redis_module::raw;

/// Calls an API function the server exported at load. `init` refuses to load
/// when one of those [`missing_api`] lists is missing, so the `None` arm is
/// unreachable in a loaded module (`tests/layering.rs` holds that every name
/// used here is one it lists): not checked again on each of the hundred or
/// so calls a claim makes. Used inside `unsafe`, as reading the pointer is.
macro_rules! api {
    ($name:ident) => {
        match redis_module::raw::$name {
            Some(f) => f,
            None => std::hint::unreachable_unchecked(),
        }
    };
}

/// The first API function the commands call that this server did not export.
pub fn missing_api() -> Option<&'static str> {
    macro_rules! check {
        ($($name:ident),*) => {
            // SAFETY: reading API pointers the server wrote once, at load.
            $( if unsafe { raw::$name }.is_none() { return Some(stringify!($name)); } )*
        };
    }
    check!(
        RedisModule_OpenKey,
        RedisModule_CloseKey,
        RedisModule_KeyType,
        RedisModule_KeyExists,
        RedisModule_DeleteKey,
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
        RedisModule_ReplyWithDouble,
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
        RedisModule_SubscribeToServerEvent,
        RedisModule_StringDMA,
        RedisModule_GetExpire,
        RedisModule_PublishMessage,
        RedisModule_Log
    );
    None
}

pub(super) static CLUSTER: AtomicBool = AtomicBool::new(false);

/// Valkey's `ACLCheckKeyPrefixPermissions(user, prefix, len, flags)`, where
/// the server has it (Valkey 8.1+; Redis's function of that name takes other
/// arguments, so it is looked up under the Valkey name only).
pub(super) type PrefixCheck =
    unsafe extern "C" fn(*mut raw::RedisModuleUser, *const c_char, usize, u32) -> c_int;
pub(super) static PREFIX_CHECK: AtomicPtr<c_void> = AtomicPtr::new(ptr::null_mut());

/// Constant strings, made once at load and kept: the words replicated
/// effects repeat and the field names of a job row.
#[derive(Debug, Clone, Copy)]
pub enum Word {
    Left,
    Right,
    Zero,
    One,
    /// `LTRIM P wake 0 63`'s end.
    WakeEnd,
    State,
    Attempts,
    Payload,
    Group,
    LastError,
    /// The row's `stalled` field, and the `last_error` of a death by stall.
    Stalled,
    Count,
    Pending,
    Active,
    Scheduled,
    Dead,
    /// `P meta`'s `paused` field.
    Paused,
    MaxStalled,
    /// `P meta`'s fairness policy and its quantum (EMQ.POLICY).
    Fairness,
    Quantum,
    Time,
    /// A row's stamp under fairness by time: its turn's claim time and what
    /// it was charged.
    Claimed,
    Charged,
}

const WORD_TEXT: [&[u8]; 23] = [
    b"LEFT",
    b"RIGHT",
    b"0",
    b"1",
    b"63",
    b"state",
    b"attempts",
    b"payload",
    b"group",
    b"last_error",
    b"stalled",
    b"count",
    b"pending",
    b"active",
    b"scheduled",
    b"dead",
    b"paused",
    b"max-stalled",
    b"fairness",
    b"quantum",
    b"time",
    b"claimed",
    b"charged",
];
pub(super) static WORDS: [AtomicPtr<raw::RedisModuleString>; 23] =
    [const { AtomicPtr::new(ptr::null_mut()) }; 23];

/// Reads, once at load, what the server is: cluster mode, whether it checks
/// key prefixes; makes the constant words.
pub fn detect_server(ctx: &redis_module::Context) {
    let ctx = ctx.ctx;
    // SAFETY: the load context is live; the constant strings are made once and kept until unload; GetApi writes one pointer into `check`.
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
            // SAFETY: a string made at load, freed once (swapped out of its slot).
            unsafe { api!(RedisModule_FreeString)(ptr::null_mut(), s) };
        }
    }
}

/// Valkey 9's `VALKEYMODULE_OPTIONS_HANDLE_ATOMIC_SLOT_MIGRATION` (not in
/// the crate's header; older servers keep the bit and never read it).
const HANDLE_ATOMIC_SLOT_MIGRATION: u32 = 1 << 5;

/// Module options: the module signals a key modified itself, and only when
/// it wrote the key (see `key.rs`); a queue's slot may move by atomic slot
/// migration (docs/production.md, "A cluster").
pub fn set_module_options(ctx: &redis_module::Context) {
    let ctx = ctx.ctx;
    let options =
        (raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED | HANDLE_ATOMIC_SLOT_MIGRATION) as c_int;
    // SAFETY: the load context is live.
    unsafe { api!(RedisModule_SetModuleOptions)(ctx, options) };
}
