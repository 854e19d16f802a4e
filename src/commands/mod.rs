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
use crate::store::{Argv, Ctx};

/// A command body: it replies itself on success.
pub type Handler = fn(&Ctx, Argv) -> Result<(), Error>;

/// Runs `handler` for the server and never unwinds into it.
///
/// # Safety
/// The pointers must be those the server passed to the command callback.
pub unsafe fn run(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
    handler: Handler,
) -> c_int {
    let ctx = Ctx::from_raw(ctx);
    let argv = Argv::from_raw(argv, argc);
    let outcome = catch_unwind(AssertUnwindSafe(|| handler(&ctx, argv)));
    let error = match outcome {
        Ok(Ok(())) => return raw::REDISMODULE_OK as c_int,
        Ok(Err(e)) => e,
        Err(_) => Error::Internal,
    };
    match error.message_c() {
        None => ctx.reply_wrong_arity(),
        Some(msg) => ctx.reply_error(&msg),
    }
    raw::REDISMODULE_OK as c_int
}

/// Declares the `extern "C"` callback the server calls for a handler.
#[macro_export]
macro_rules! command_callback {
    ($handler:path) => {{
        extern "C" fn callback(
            ctx: *mut redis_module::raw::RedisModuleCtx,
            argv: *mut *mut redis_module::raw::RedisModuleString,
            argc: std::os::raw::c_int,
        ) -> std::os::raw::c_int {
            unsafe { $crate::commands::run(ctx, argv, argc, $handler) }
        }
        Some(callback as unsafe extern "C" fn(_, _, _) -> _) as redis_module::raw::RedisModuleCmdFunc
    }};
}
