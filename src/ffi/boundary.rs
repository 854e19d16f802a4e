//! The boundary between the server and the module: every callback the server
//! makes runs its body here, inside `catch_unwind` (a panic crossing into the
//! server would abort it). An `Err` or a panic becomes an error reply; a
//! reply is sent only whole (`reply.rs`).

use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use super::ctx::{log_warning, Ctx};
use super::reply::Reply;
use super::string::Argv;
use crate::model::error::Error;

/// Runs a command's body (`Ok(None)`: it blocked its client, which is
/// answered later). `writable`: the command writes (its keys are opened for
/// writing).
pub(super) fn command(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    writable: bool,
    body: impl for<'a> FnOnce(&Ctx, Argv<'a>) -> Result<Option<Reply>, Error>,
) -> c_int {
    guarded(ctx, argv, argc, writable, body);
    raw::REDISMODULE_OK as c_int
}

/// Runs `body`; sends what it replies, or its error, or the internal error
/// when it panics. Returns whether anything was sent (`Ok(None)`: nothing).
pub(super) fn guarded(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    writable: bool,
    body: impl for<'a> FnOnce(&Ctx, Argv<'a>) -> Result<Option<Reply>, Error>,
) -> bool {
    let sent = catch_unwind(AssertUnwindSafe(|| {
        let ctx = Ctx::new(ctx, writable);
        // SAFETY: the server's argv outlives this callback.
        let argv = unsafe { Argv::from_raw(argv, argc) };
        let outcome = catch_unwind(AssertUnwindSafe(|| body(&ctx, argv)));
        match outcome {
            Ok(Ok(Some(reply))) => ctx.send(&reply),
            Ok(Ok(None)) => return false,
            Ok(Err(e)) => ctx.send_error(&e),
            Err(_) => ctx.send_error(&Error::Internal),
        }
        true
    }));
    sent.unwrap_or_else(|_| {
        log_panic();
        false
    })
}

/// A panic outside a command's body (the hook has logged its message).
pub(super) fn log_panic() {
    log_warning("emq: a panic was caught at the module boundary");
}

/// Runs `f` with a context made of the one the crate's load or unload hook
/// received (e.g. to stop the module's timers at unload).
pub fn with_module_ctx(ctx: &redis_module::Context, f: impl FnOnce(&Ctx)) {
    let ctx = Ctx::new(ctx.ctx, false);
    if catch_unwind(AssertUnwindSafe(|| f(&ctx))).is_err() {
        log_panic();
    }
}
