//! The only `unsafe` in the module: the server's context, its strings and its
//! keys, behind small safe types. Everything above this file works on byte
//! slices and these handles; nothing above it sees a raw pointer.
//!
//! Two rules of the key API shape this file:
//! - the module loads with `NO_IMPLICIT_SIGNAL_MODIFIED`: a [`WriteKey`]
//!   reports its key modified (WATCH, tracking) when it is closed only if it
//!   was written, so a command may open a key for writing, read it, and
//!   decide not to write it;
//! - a handle caches the key's value, so no key is open twice at once and
//!   every read handle of a key is dropped before that key is written (the
//!   borrow of [`Ctx`] does not enforce this; the commands' shape does).

use std::cell::Cell;
use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_long};
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};

use redis_module::raw;

use crate::errors::Error;

const READ: c_int = 1;
const WRITE: c_int = 2;
const LIST_HEAD: c_int = 0;
const LIST_TAIL: c_int = 1;
const KEYTYPE_EMPTY: c_int = 0;
const KEYTYPE_LIST: c_int = 2;
const KEYTYPE_HASH: c_int = 3;
const KEYTYPE_SET: c_int = 4;
const KEYTYPE_ZSET: c_int = 5;
const CTX_FLAGS_LUA: c_int = 1 << 0;
const CTX_FLAGS_MULTI: c_int = 1 << 1;
const CTX_FLAGS_CLUSTER: c_int = 1 << 5;
const CTX_FLAGS_REPLICATED: c_int = 1 << 12;
const CTX_FLAGS_LOADING: c_int = 1 << 13;
/// `REDISMODULE_HASH_DELETE`, which bindgen does not emit: the address 1.
const HASH_DELETE: *mut raw::RedisModuleString = ptr::without_provenance_mut(1);

/// Calls an API function the server exported at load. `init` refuses to load
/// when one of [`REQUIRED_API`] is missing, so the `None` arm is unreachable
/// in a loaded module; it panics (caught at the command boundary) rather than
/// aborting the server.
macro_rules! api {
    ($name:ident) => {
        match raw::$name {
            Some(f) => f,
            None => panic!(concat!("server API ", stringify!($name), " is missing")),
        }
    };
}

/// Whether every API function the commands call was exported by this server.
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
        RedisModule_ValueLength,
        RedisModule_ListPush,
        RedisModule_ListPop,
        RedisModule_ListGet,
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
        RedisModule_FreeCallReply
    );
    None
}

/// Redis before 7.2 replies zset scores with `%.17g` (`ZSCORE` of 1e17 is
/// "1e+17"), while its `RM_CreateStringFromDouble` prints integers plainly;
/// newer servers (and Valkey) use one formatter for both.
static SCORES_AS_17G: AtomicBool = AtomicBool::new(false);

static CLUSTER: AtomicBool = AtomicBool::new(false);

/// Constant arguments for replication, made once at load and kept.
#[derive(Debug, Clone, Copy)]
pub enum Word {
    Left,
    Right,
    Nx,
    Zero,
}

const WORD_TEXT: [&[u8]; 4] = [b"LEFT", b"RIGHT", b"NX", b"0"];
static WORDS: [AtomicPtr<raw::RedisModuleString>; 4] = [const { AtomicPtr::new(ptr::null_mut()) }; 4];

/// Writes a warning to the server's log (no context needed).
pub fn log_warning(msg: &str) {
    let text = std::ffi::CString::new(msg.replace('\0', "\\0")).unwrap_or_default();
    unsafe {
        if let Some(log) = raw::RedisModule_Log {
            log(
                ptr::null_mut(),
                c"warning".as_ptr(),
                c"%s".as_ptr(),
                text.as_ptr(),
            );
        }
    }
}

/// Frees the constant words (at module unload).
pub fn release_words() {
    for slot in &WORDS {
        let s = slot.swap(ptr::null_mut(), Ordering::Relaxed);
        if !s.is_null() {
            unsafe { api!(RedisModule_FreeString)(ptr::null_mut(), s) };
        }
    }
}

/// The constant as an argument (created at load by [`detect_server`]).
pub fn word(w: Word) -> Arg<'static> {
    Arg {
        ptr: WORDS[w as usize].load(Ordering::Relaxed),
        _life: std::marker::PhantomData,
    }
}

/// Reads, once at load, what the server is: cluster mode, and how it
/// formats zset scores; makes the constant [`Word`]s.
///
/// # Safety
/// `ctx` must be the context `RedisModule_OnLoad` received.
pub unsafe fn detect_server(ctx: *mut raw::RedisModuleCtx) {
    let flags = unsafe { raw::RedisModule_GetContextFlags.map_or(0, |f| f(ctx)) };
    CLUSTER.store(flags & CTX_FLAGS_CLUSTER != 0, Ordering::Relaxed);
    for (slot, text) in WORDS.iter().zip(WORD_TEXT) {
        let s = unsafe { api!(RedisModule_CreateString)(ctx, text.as_ptr().cast::<c_char>(), text.len()) };
        slot.store(s, Ordering::Relaxed);
    }
    // 0x00MMmmpp; Valkey reports a Redis-compatible 7.2.4.
    let version = unsafe { raw::RedisModule_GetServerVersion.map_or(0, |f| f()) };
    SCORES_AS_17G.store(version != 0 && version < 0x0007_0200, Ordering::Relaxed);
}

/// Module options: the module signals a key modified itself, and only when
/// it wrote the key (see [`WriteKey`]).
///
/// # Safety
/// `ctx` must be the context `RedisModule_OnLoad` received.
pub unsafe fn set_module_options(ctx: *mut raw::RedisModuleCtx) {
    let options = raw::REDISMODULE_OPTION_NO_IMPLICIT_SIGNAL_MODIFIED as c_int;
    unsafe { api!(RedisModule_SetModuleOptions)(ctx, options) };
}

/// The common case of a mint (an integer well inside 2^53) printed without a
/// round trip through the server: every formatter above prints such a
/// value as its plain digits.
pub fn integer_score(score: f64) -> Option<i64> {
    // -0.0 is printed "-0" by the server: not this case.
    let plain = score.fract() == 0.0 && score.abs() < 1e15 && !(score == 0.0 && score.is_sign_negative());
    plain.then_some(score as i64)
}

/// `%.17g`, as libc prints it (what Redis 7.0's `ZSCORE` replies).
fn format_17g(score: f64) -> Vec<u8> {
    let mut buf = [0u8; 64];
    let n = unsafe { libc::snprintf(buf.as_mut_ptr().cast(), buf.len(), c"%.17g".as_ptr(), score) };
    buf[..(n.max(0) as usize).min(buf.len() - 1)].to_vec()
}

/// The callbacks of a blocked client.
pub struct BlockCallbacks {
    pub ready: raw::RedisModuleCmdFunc,
    pub timeout: raw::RedisModuleCmdFunc,
    pub freed: Option<unsafe extern "C" fn(*mut raw::RedisModuleCtx, *mut std::os::raw::c_void)>,
}

static BLOCK_TOKEN: u8 = 0;

/// The command's context: replies, strings, keys, replication, the clock.
pub struct Ctx {
    ptr: *mut raw::RedisModuleCtx,
    /// Replicate the command itself, not its effects (see [`Ctx::replicate`]).
    verbatim: Cell<bool>,
    /// Whether the command has written (asked to replicate an effect).
    wrote: Cell<bool>,
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
        // Compared as integers: newer servers have types this crate's enum lacks.
        match code {
            KEYTYPE_EMPTY => Kind::Empty,
            KEYTYPE_LIST => Kind::List,
            KEYTYPE_HASH => Kind::Hash,
            KEYTYPE_SET => Kind::Set,
            KEYTYPE_ZSET => Kind::Zset,
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

/// Keyspace-notification classes (`REDISMODULE_NOTIFY_*`).
#[derive(Debug, Clone, Copy)]
pub enum Class {
    Generic = 1 << 2,
    List = 1 << 4,
    Hash = 1 << 6,
    Zset = 1 << 7,
}

/// A string the module owns; freed on drop.
pub struct RStr {
    ptr: *mut raw::RedisModuleString,
}

impl RStr {
    fn own(ptr: *mut raw::RedisModuleString) -> Option<RStr> {
        // Not `then_some`: it would build (and drop, freeing NULL) an RStr.
        if ptr.is_null() {
            None
        } else {
            Some(RStr { ptr })
        }
    }

    pub fn bytes(&self) -> &[u8] {
        bytes_of(self.ptr)
    }

    pub fn as_arg(&self) -> Arg<'_> {
        Arg {
            ptr: self.ptr,
            _life: std::marker::PhantomData,
        }
    }
}

impl Drop for RStr {
    fn drop(&mut self) {
        // A NULL context is allowed: these strings are not under auto memory.
        unsafe { api!(RedisModule_FreeString)(ptr::null_mut(), self.ptr) }
    }
}

/// A string borrowed from the server (a command argument) or from an [`RStr`].
#[derive(Clone, Copy)]
pub struct Arg<'a> {
    ptr: *mut raw::RedisModuleString,
    _life: std::marker::PhantomData<&'a ()>,
}

impl<'a> Arg<'a> {
    pub fn bytes(&self) -> &'a [u8] {
        bytes_of(self.ptr)
    }

    /// The value as a zset score, parsed by the server's own rules (what
    /// `ZADD` accepts: no NaN, no spaces).
    pub fn to_score(&self) -> Option<f64> {
        let mut v = 0f64;
        let status = unsafe { api!(RedisModule_StringToDouble)(self.ptr, &mut v) };
        (status == raw::REDISMODULE_OK as c_int && !v.is_nan()).then_some(v)
    }
}

fn bytes_of<'a>(s: *mut raw::RedisModuleString) -> &'a [u8] {
    let mut len: usize = 0;
    unsafe {
        let p = api!(RedisModule_StringPtrLen)(s, &mut len);
        if p.is_null() || len == 0 {
            &[]
        } else {
            std::slice::from_raw_parts(p.cast::<u8>(), len)
        }
    }
}

/// A command's arguments, `argv[0]` being the command name.
#[derive(Clone, Copy)]
pub struct Argv<'a> {
    args: &'a [*mut raw::RedisModuleString],
}

impl<'a> Argv<'a> {
    /// # Safety
    /// `argv` must point to `argc` strings that outlive the returned value.
    pub unsafe fn from_raw(argv: *mut *mut raw::RedisModuleString, argc: c_int) -> Argv<'a> {
        let args = if argv.is_null() || argc <= 0 {
            &[][..]
        } else {
            std::slice::from_raw_parts(argv, argc as usize)
        };
        Argv { args }
    }

    pub fn len(&self) -> usize {
        self.args.len()
    }

    pub fn is_empty(&self) -> bool {
        self.args.is_empty()
    }

    pub fn get(&self, i: usize) -> Arg<'a> {
        Arg {
            ptr: self.args[i],
            _life: std::marker::PhantomData,
        }
    }
}

/// A key opened for reading. `None` from [`Ctx::open_read`] means missing.
pub struct ReadKey {
    ptr: *mut raw::RedisModuleKey,
}

/// A key opened for writing: closing it signals the key modified when one
/// of its writing methods ran.
pub struct WriteKey<'a> {
    ptr: *mut raw::RedisModuleKey,
    ctx: *mut raw::RedisModuleCtx,
    name: &'a RStr,
    written: Cell<bool>,
}

impl Drop for ReadKey {
    fn drop(&mut self) {
        unsafe { api!(RedisModule_CloseKey)(self.ptr) }
    }
}

impl Drop for WriteKey<'_> {
    fn drop(&mut self) {
        unsafe {
            if self.written.get() {
                api!(RedisModule_SignalModifiedKey)(self.ctx, self.name.ptr);
            }
            api!(RedisModule_CloseKey)(self.ptr)
        }
    }
}

/// Reads shared by both handle kinds.
pub trait KeyRead {
    fn raw(&self) -> *mut raw::RedisModuleKey;

    fn kind(&self) -> Kind {
        Kind::of(unsafe { api!(RedisModule_KeyType)(self.raw()) })
    }

    /// Elements of a list, zset, hash or set; 0 for a missing key.
    fn len(&self) -> usize {
        unsafe { api!(RedisModule_ValueLength)(self.raw()) }
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn list_get(&self, index: i64) -> Option<RStr> {
        RStr::own(unsafe { api!(RedisModule_ListGet)(self.raw(), index as c_long) })
    }

    fn hash_get(&self, field: Arg) -> Option<RStr> {
        let mut out: *mut raw::RedisModuleString = ptr::null_mut();
        unsafe {
            api!(RedisModule_HashGet)(
                self.raw(),
                0,
                field.ptr,
                &mut out as *mut *mut raw::RedisModuleString,
                ptr::null_mut::<c_char>(),
            );
        }
        RStr::own(out)
    }

    fn zset_score(&self, member: Arg) -> Option<f64> {
        let mut score = 0f64;
        let status = unsafe { api!(RedisModule_ZsetScore)(self.raw(), member.ptr, &mut score) };
        (status == raw::REDISMODULE_OK as c_int).then_some(score)
    }

    /// The `n` lowest-scored members, in ZPOPMIN order, without removing them.
    fn zset_head(&self, n: usize) -> Vec<(RStr, f64)> {
        self.zset_up_to(f64::INFINITY, n)
    }

    /// At most `n` members scored `<= max`, lowest first (ties by member).
    fn zset_up_to(&self, max: f64, n: usize) -> Vec<(RStr, f64)> {
        let mut out = Vec::with_capacity(n.min(1024));
        if n == 0 {
            return out;
        }
        let key = self.raw();
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
            api!(RedisModule_ZsetRangeStop)(key);
        }
        out
    }
}

impl KeyRead for ReadKey {
    fn raw(&self) -> *mut raw::RedisModuleKey {
        self.ptr
    }
}

impl KeyRead for WriteKey<'_> {
    fn raw(&self) -> *mut raw::RedisModuleKey {
        self.ptr
    }
}

impl WriteKey<'_> {
    /// The key's name, as an argument (for replication).
    pub fn name(&self) -> Arg<'_> {
        self.name.as_arg()
    }

    fn wrote(&self) {
        self.written.set(true);
    }

    /// Reports the key modified on close without changing it (a rotation
    /// of a one-element list).
    pub fn touch(&self) {
        self.wrote();
    }

    pub fn list_push_tail(&self, value: Arg) {
        self.wrote();
        unsafe { api!(RedisModule_ListPush)(self.ptr, LIST_TAIL, value.ptr) };
    }

    pub fn list_pop_head(&self) -> Option<RStr> {
        self.wrote();
        RStr::own(unsafe { api!(RedisModule_ListPop)(self.ptr, LIST_HEAD) })
    }

    pub fn list_pop_tail(&self) -> Option<RStr> {
        self.wrote();
        RStr::own(unsafe { api!(RedisModule_ListPop)(self.ptr, LIST_TAIL) })
    }

    /// Adds or updates; with `nx` only adds. Returns whether it was added.
    pub fn zset_add(&self, score: f64, member: Arg, nx: bool) -> bool {
        self.wrote();
        let mut flags: c_int = if nx { 1 << 1 } else { 0 };
        unsafe { api!(RedisModule_ZsetAdd)(self.ptr, score, member.ptr, &mut flags) };
        flags & (1 << 2) != 0
    }

    pub fn zset_rem(&self, member: Arg) -> bool {
        self.wrote();
        let mut deleted: c_int = 0;
        unsafe { api!(RedisModule_ZsetRem)(self.ptr, member.ptr, &mut deleted) };
        deleted != 0
    }

    pub fn hash_set(&self, field: Arg, value: Arg) {
        self.wrote();
        unsafe {
            api!(RedisModule_HashSet)(self.ptr, 0, field.ptr, value.ptr, ptr::null_mut::<c_char>());
        }
    }

    pub fn hash_del(&self, field: Arg) {
        self.wrote();
        unsafe {
            api!(RedisModule_HashSet)(self.ptr, 0, field.ptr, HASH_DELETE, ptr::null_mut::<c_char>());
        }
    }
}

impl Ctx {
    /// # Safety
    /// `ptr` must be the context the server passed to the running command.
    pub unsafe fn from_raw(ptr: *mut raw::RedisModuleCtx) -> Ctx {
        Ctx {
            ptr,
            verbatim: Cell::new(false),
            wrote: Cell::new(false),
        }
    }

    pub fn string(&self, bytes: &[u8]) -> RStr {
        let ptr =
            unsafe { api!(RedisModule_CreateString)(self.ptr, bytes.as_ptr().cast::<c_char>(), bytes.len()) };
        RStr { ptr }
    }

    /// The pieces joined into one string (on the stack when short: key
    /// names are built on every call).
    pub fn string_of(&self, parts: &[&[u8]]) -> RStr {
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
        self.string(buf)
    }

    pub fn string_from_i64(&self, v: i64) -> RStr {
        RStr {
            ptr: unsafe { api!(RedisModule_CreateStringFromLongLong)(self.ptr, v) },
        }
    }

    /// A zset score as the server formats it (what `ZSCORE` replies).
    pub fn format_score(&self, score: f64) -> RStr {
        if let Some(int) = integer_score(score) {
            return self.string(int.to_string().as_bytes());
        }
        if SCORES_AS_17G.load(Ordering::Relaxed) {
            return self.string(&format_17g(score));
        }
        RStr {
            ptr: unsafe { api!(RedisModule_CreateStringFromDouble)(self.ptr, score) },
        }
    }

    /// `None` when the key does not exist.
    pub fn open_read(&self, name: &RStr) -> Option<ReadKey> {
        let ptr = unsafe { api!(RedisModule_OpenKey)(self.ptr, name.ptr, READ) };
        if ptr.is_null() {
            None
        } else {
            Some(ReadKey { ptr: ptr.cast() })
        }
    }

    pub fn open_write<'a>(&self, name: &'a RStr) -> WriteKey<'a> {
        let ptr = unsafe { api!(RedisModule_OpenKey)(self.ptr, name.ptr, READ | WRITE) };
        WriteKey {
            ptr: ptr.cast(),
            ctx: self.ptr,
            name,
            written: Cell::new(false),
        }
    }

    /// The type of a key, without keeping it open.
    pub fn kind_of(&self, name: &RStr) -> Kind {
        self.open_read(name).map_or(Kind::Empty, |k| k.kind())
    }

    /// The length of a key already known to be of the right type (0 when
    /// missing), without keeping it open: for re-reads after a write.
    pub fn len_of(&self, name: &RStr) -> u64 {
        self.open_read(name).map_or(0, |k| k.len() as u64)
    }

    fn flags(&self) -> c_int {
        unsafe { api!(RedisModule_GetContextFlags)(self.ptr) }
    }

    /// Cluster mode, read once at load (`GetContextFlags` computes many
    /// flags; a server cannot change its cluster mode while running).
    pub fn is_cluster(&self) -> bool {
        CLUSTER.load(Ordering::Relaxed)
    }

    /// Inside MULTI/EXEC or a script, where a command must not block.
    pub fn in_transaction_or_script(&self) -> bool {
        self.flags() & (CTX_FLAGS_MULTI | CTX_FLAGS_LUA) != 0
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

    // ---- blocking ----

    /// Blocks the calling client on `key` for `timeout_ms` (0 = forever):
    /// `callbacks.ready` runs each time the key is signalled ready, in the
    /// order clients began to wait; `callbacks.timeout` on timeout or
    /// `CLIENT UNBLOCK`; `callbacks.freed` once, however the wait ends.
    pub fn block_on_key(&self, key: &RStr, timeout_ms: i64, callbacks: BlockCallbacks) {
        let mut keys = [key.ptr];
        unsafe {
            api!(RedisModule_BlockClientOnKeys)(
                self.ptr,
                callbacks.ready,
                callbacks.timeout,
                callbacks.freed,
                timeout_ms,
                keys.as_mut_ptr(),
                1,
                // Non-NULL so that the server calls `freed`.
                ptr::addr_of!(BLOCK_TOKEN) as *mut std::os::raw::c_void,
            );
        }
    }

    /// Wakes clients blocked on `key` (a lane joined the ring).
    pub fn signal_ready(&self, key: &RStr) {
        unsafe { api!(RedisModule_SignalKeyAsReady)(self.ptr, key.ptr) };
    }

    // ---- keyspace notifications (the key API fires none itself) ----

    /// Fires `event` on `name`, and `del` when the write emptied the key (the
    /// server deletes emptied aggregates), as core commands do.
    pub fn notify(&self, key: &WriteKey, class: Class, event: &CStr) {
        self.notify_event(class, event, key.name);
        if key.kind() == Kind::Empty {
            self.notify_event(Class::Generic, c"del", key.name);
        }
    }

    fn notify_event(&self, class: Class, event: &CStr, name: &RStr) {
        unsafe { api!(RedisModule_NotifyKeyspaceEvent)(self.ptr, class as c_int, event.as_ptr(), name.ptr) };
    }

    // ---- replies ----

    pub fn reply_array(&self, len: usize) {
        unsafe { api!(RedisModule_ReplyWithArray)(self.ptr, len as c_long) };
    }

    pub fn reply_map(&self, len: usize) {
        unsafe { api!(RedisModule_ReplyWithMap)(self.ptr, len as c_long) };
    }

    pub fn reply_empty_array(&self) {
        unsafe { api!(RedisModule_ReplyWithEmptyArray)(self.ptr) };
    }

    pub fn reply_null_array(&self) {
        unsafe { api!(RedisModule_ReplyWithNullArray)(self.ptr) };
    }

    pub fn reply_null(&self) {
        unsafe { api!(RedisModule_ReplyWithNull)(self.ptr) };
    }

    pub fn reply_str(&self, s: Arg) {
        unsafe { api!(RedisModule_ReplyWithString)(self.ptr, s.ptr) };
    }

    pub fn reply_bytes(&self, b: &[u8]) {
        unsafe { api!(RedisModule_ReplyWithStringBuffer)(self.ptr, b.as_ptr().cast::<c_char>(), b.len()) };
    }

    pub fn reply_i64(&self, v: i64) {
        unsafe { api!(RedisModule_ReplyWithLongLong)(self.ptr, v) };
    }

    pub fn reply_ok(&self) {
        unsafe { api!(RedisModule_ReplyWithSimpleString)(self.ptr, c"OK".as_ptr()) };
    }

    pub fn reply_wrong_arity(&self) {
        unsafe { api!(RedisModule_WrongArity)(self.ptr) };
    }

    /// `msg` must start with an error code (`ERR`, `WRONGTYPE`).
    pub fn reply_error(&self, msg: &CStr) {
        unsafe { api!(RedisModule_ReplyWithError)(self.ptr, msg.as_ptr()) };
    }

    // ---- replication ----

    /// Sends the effect `cmd args…` to replicas and the AOF (several calls
    /// in one command reach them wrapped in MULTI/EXEC, in call order); in
    /// verbatim mode only notes that the command wrote, and [`Ctx::finish`]
    /// replicates the command itself.
    pub fn replicate(&self, cmd: &CStr, args: &[Arg]) {
        self.wrote.set(true);
        if self.verbatim.get() {
            return;
        }
        let raw_args: Vec<*mut raw::RedisModuleString> = args.iter().map(|a| a.ptr).collect();
        self.replicate_raw(cmd, &raw_args);
    }

    /// Replicate this command as itself rather than as its effects: right
    /// only for a command whose effects follow from the keyspace and its
    /// arguments alone, and only when every replica and AOF reader has the
    /// module.
    pub fn replicate_verbatim_mode(&self) {
        self.verbatim.set(true);
    }

    /// The end of a command: in verbatim mode, replicates the command if it
    /// wrote. (Also after an error or a panic: a replica running the same
    /// command on the same keyspace stops at the same point.)
    pub fn finish(&self) {
        if self.verbatim.get() && self.wrote.get() {
            self.replicate_verbatim();
        }
    }

    /// Replicates `cmd a b n1 n2 n3`: two strings and three integers, the
    /// integers made into strings by the server (no strings to build here).
    pub fn replicate_ssiii(&self, cmd: &CStr, a: Arg, b: Arg, n: [i64; 3]) {
        self.wrote.set(true);
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

    /// Whether the command came from the primary's replication stream or an
    /// AOF being loaded (where internal commands are accepted).
    pub fn from_primary_or_loading(&self) -> bool {
        self.flags() & (CTX_FLAGS_REPLICATED | CTX_FLAGS_LOADING) != 0
    }

    fn replicate_raw(&self, cmd: &CStr, args: &[*mut raw::RedisModuleString]) {
        unsafe {
            api!(RedisModule_Replicate)(
                self.ptr,
                cmd.as_ptr(),
                c"v".as_ptr(),
                args.as_ptr() as *mut *mut raw::RedisModuleString,
                args.len(),
            );
        }
    }

    // ---- calls the key API has no equivalent for (off the claim path) ----

    /// A set command with an integer reply (`SADD`, `SREM`, `SISMEMBER`).
    pub fn set_call(&self, cmd: &CStr, key: &RStr, member: Arg) -> i64 {
        unsafe {
            let reply = api!(RedisModule_Call)(self.ptr, cmd.as_ptr(), c"ss".as_ptr(), key.ptr, member.ptr);
            take_integer(reply)
        }
    }

    /// `LREM key 0 element`: removes every occurrence; returns how many.
    pub fn list_remove_all(&self, key: &RStr, element: Arg) -> i64 {
        unsafe {
            let reply = api!(RedisModule_Call)(
                self.ptr,
                c"LREM".as_ptr(),
                c"scs".as_ptr(),
                key.ptr,
                c"0".as_ptr(),
                element.ptr,
            );
            take_integer(reply)
        }
    }

    /// `LPOS key element` is not nil.
    pub fn list_contains(&self, key: &RStr, element: Arg) -> bool {
        unsafe {
            let reply =
                api!(RedisModule_Call)(self.ptr, c"LPOS".as_ptr(), c"ss".as_ptr(), key.ptr, element.ptr);
            if reply.is_null() {
                return false;
            }
            let found = api!(RedisModule_CallReplyType)(reply) == raw::REDISMODULE_REPLY_INTEGER as c_int;
            api!(RedisModule_FreeCallReply)(reply);
            found
        }
    }
}

/// The integer of a call reply (0 for anything else), freeing the reply.
unsafe fn take_integer(reply: *mut raw::RedisModuleCallReply) -> i64 {
    if reply.is_null() {
        return 0;
    }
    let v = if api!(RedisModule_CallReplyType)(reply) == raw::REDISMODULE_REPLY_INTEGER as c_int {
        api!(RedisModule_CallReplyInteger)(reply)
    } else {
        0
    };
    api!(RedisModule_FreeCallReply)(reply);
    v
}

#[cfg(test)]
mod tests {
    use super::{format_17g, integer_score};

    #[test]
    fn integer_scores_print_plainly_on_every_server() {
        assert_eq!(integer_score(42.0), Some(42));
        assert_eq!(integer_score(-7.0), Some(-7));
        assert_eq!(integer_score(0.0), Some(0));
        assert_eq!(integer_score(-0.0), None, "the server prints -0");
        assert_eq!(integer_score(1.5), None);
        assert_eq!(integer_score(1e17), None, "Redis 7.0 prints 1e+17");
        // Where the fast path applies, %.17g agrees with it.
        for v in [1.0, 123456789012345.0, -99.0] {
            let fast = integer_score(v).unwrap().to_string();
            assert_eq!(String::from_utf8(format_17g(v)).unwrap(), fast);
        }
        assert_eq!(format_17g(1e17), b"1e+17");
        assert_eq!(format_17g(1.1), b"1.1000000000000001");
    }
}
