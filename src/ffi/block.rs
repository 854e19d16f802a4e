//! Blocked clients and timers: the server calls back into the module later,
//! with a context of its own. Each callback runs inside the same boundary as
//! a command (`boundary.rs`): errors and panics become replies or log lines.

use std::os::raw::{c_int, c_void};

use redis_module::raw;

use super::boundary::{guarded, log_panic};
use super::ctx::Ctx;
use super::reply::Reply;
use super::string::{Arg, Argv};
use crate::model::error::Error;

/// What a blocked client does when the key it waits on is signalled ready:
/// `Ok(Some(reply))` answers it (it stops waiting), `Ok(None)` keeps it
/// waiting, `Err` answers the error.
pub type Ready = for<'a> fn(&Ctx, Argv<'a>) -> Result<Option<Reply>, Error>;

/// A blocked client's callbacks: `ready` as above, `ended(ctx, arg)` once
/// however the wait ends (served, timed out, disconnected, unblocked).
#[derive(Clone, Copy)]
pub struct Wait {
    pub ready: Ready,
    pub ended: fn(Option<&Ctx>, u64),
    pub arg: u64,
}

impl Ctx {
    /// Blocks the calling client on `key` for `timeout_ms` (0 = forever,
    /// checked by the caller to be one the server accepts). On timeout or
    /// `CLIENT UNBLOCK` it gets a null array, as `BLMOVE` gives.
    pub fn block_on_key(&self, key: Arg, timeout_ms: i64, wait: Wait) {
        let mut keys = [key.ptr];
        let data = Box::into_raw(Box::new(wait)).cast::<c_void>();
        // SAFETY: a live context; the key string outlives the call; the server owns `data` until `on_end` frees it.
        unsafe {
            api!(RedisModule_BlockClientOnKeys)(
                self.ptr,
                Some(on_ready),
                Some(on_timeout),
                Some(on_end),
                timeout_ms,
                keys.as_mut_ptr(),
                1,
                data,
            );
        }
    }
}

extern "C" fn on_ready(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    // SAFETY: the private data is the `Wait` this module boxed in `block_on_key`, alive until `on_end`.
    let wait = unsafe {
        let data = raw::RedisModule_GetBlockedClientPrivateData.map_or(std::ptr::null_mut(), |get| get(ctx));
        match data.cast::<Wait>().as_ref() {
            Some(wait) => *wait,
            None => return raw::REDISMODULE_OK as c_int,
        }
    };
    let answered = guarded(ctx, argv, argc, true, wait.ready);
    if answered {
        raw::REDISMODULE_OK as c_int
    } else {
        raw::REDISMODULE_ERR as c_int
    }
}

extern "C" fn on_timeout(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    guarded(ctx, argv, argc, false, |_, _| Ok(Some(Reply::NullArray)));
    raw::REDISMODULE_OK as c_int
}

unsafe extern "C" fn on_end(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    if data.is_null() {
        return;
    }
    let wait = Box::from_raw(data.cast::<Wait>());
    let ended = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let ctx = (!ctx.is_null()).then(|| Ctx::new(ctx, false));
        (wait.ended)(ctx.as_ref(), wait.arg);
    }));
    if ended.is_err() {
        log_panic();
    }
}

/// A timer's work: runs with a writable context of its own (in database 0:
/// select the one it needs) and the word it was started with.
pub type TimerFn = fn(&mut Ctx, u64);

struct TimerData {
    run: TimerFn,
    arg: u64,
}

/// A running timer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimerId(u64);

impl Ctx {
    /// Runs `run(ctx, arg)` once, `period_ms` from now.
    pub fn start_timer(&self, period_ms: i64, run: TimerFn, arg: u64) -> TimerId {
        let data = Box::into_raw(Box::new(TimerData { run, arg })).cast::<c_void>();
        // SAFETY: a live context; the server owns `data` until the timer fires or is stopped.
        let id = unsafe { api!(RedisModule_CreateTimer)(self.ptr, period_ms.max(0), Some(on_timer), data) };
        TimerId(id)
    }

    /// Stops a timer that has not fired; false when it had already fired or
    /// was stopped.
    pub fn stop_timer(&self, id: TimerId) -> bool {
        let mut data: *mut c_void = std::ptr::null_mut();
        let stopped =
            // SAFETY: a live context; StopTimer writes the timer's data pointer into `data`.
            unsafe { api!(RedisModule_StopTimer)(self.ptr, id.0, &mut data) } == raw::REDISMODULE_OK as c_int;
        if stopped && !data.is_null() {
            // SAFETY: the data of a stopped timer, boxed by `start_timer` and not freed by `on_timer`, which never ran.
            drop(unsafe { Box::from_raw(data.cast::<TimerData>()) });
        }
        stopped
    }
}

unsafe extern "C" fn on_timer(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    if data.is_null() {
        return;
    }
    let timer = Box::from_raw(data.cast::<TimerData>());
    let mut ctx = Ctx::new(ctx, true);
    if std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (timer.run)(&mut ctx, timer.arg))).is_err() {
        log_panic();
    }
}
