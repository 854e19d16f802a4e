//! The command boundary: every command runs inside [`run`], which turns its
//! `Err` into an error reply and a panic into an error reply too (a panic
//! crossing into the server would abort it).

pub mod claim;
pub mod lanes;
pub mod lifecycle;

use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};

use redis_module::raw;

use crate::errors::Error;
use crate::stats;
use crate::store::{Argv, BlockCallbacks, Ctx};

/// A command body: it replies itself on success.
pub type Handler = fn(&Ctx, Argv) -> Result<(), Error>;

/// Runs `handler` for the server and never unwinds into it. `deterministic`:
/// the command's effects follow from the keyspace and its arguments alone,
/// so with `emq.replicate command` it is replicated as itself.
///
/// # Safety
/// The pointers must be those the server passed to the command callback.
pub unsafe fn run(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: Handler,
    deterministic: bool,
) -> c_int {
    boundary(ctx, argv, argc, |ctx, argv| {
        if deterministic && stats::replicate_command() {
            ctx.replicate_verbatim_mode();
        }
        handler(ctx, argv)
    });
    raw::REDISMODULE_OK as c_int
}

/// Runs `body`; an `Err` or a panic becomes an error reply and `None`.
unsafe fn boundary<T>(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    body: impl FnOnce(&Ctx, Argv) -> Result<T, Error>,
) -> Option<T> {
    let ctx = Ctx::from_raw(ctx);
    let argv = Argv::from_raw(argv, argc);
    let result = catch_unwind(AssertUnwindSafe(|| body(&ctx, argv)));
    let _ = catch_unwind(AssertUnwindSafe(|| ctx.finish()));
    let error = match result {
        Ok(Ok(value)) => return Some(value),
        Ok(Err(e)) => e,
        Err(_) => Error::Internal,
    };
    match error.message_c() {
        None => ctx.reply_wrong_arity(),
        Some(msg) => ctx.reply_error(&msg),
    }
    None
}

/// `EMQ.DEBUG-PANIC`: panics, on purpose (registered only with the
/// `debug-panic` load argument, for the test that the boundary holds).
pub fn debug_panic(_: &Ctx, _: Argv) -> Result<(), Error> {
    panic!("emq.debug-panic: a panic on purpose")
}

/// The callbacks of a claim waiting in BLOCK.
pub fn blocked_claim_callbacks(weighted: bool) -> BlockCallbacks {
    BlockCallbacks {
        ready: Some(if weighted { wclaim_ready } else { claim_ready }),
        timeout: Some(claim_timeout),
        freed: Some(claim_wait_over),
    }
}

extern "C" fn claim_ready(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    unsafe { ready(ctx, argv, argc, false) }
}

extern "C" fn wclaim_ready(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    unsafe { ready(ctx, argv, argc, true) }
}

/// `OK` unblocks the client (it was served, or told the error); `ERR`
/// keeps it waiting for the rest of its timeout.
unsafe fn ready(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    weighted: bool,
) -> c_int {
    match boundary(ctx, argv, argc, |ctx, argv| claim::on_ready(ctx, argv, weighted)) {
        Some(false) => raw::REDISMODULE_ERR as c_int,
        _ => raw::REDISMODULE_OK as c_int,
    }
}

/// The wait ran out (or `CLIENT UNBLOCK`): a null array, as `BLMOVE` gives.
extern "C" fn claim_timeout(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    let _ = catch_unwind(|| unsafe { Ctx::from_raw(ctx) }.reply_null_array());
    raw::REDISMODULE_OK as c_int
}

/// Called once however a wait ends (served, timed out, disconnected).
unsafe extern "C" fn claim_wait_over(_ctx: *mut raw::RedisModuleCtx, _token: *mut std::os::raw::c_void) {
    stats::BLOCKED.sub(1);
}
