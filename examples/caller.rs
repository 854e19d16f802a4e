//! A second module, for tests only: it calls other commands the way another
//! module would, through `RM_Call`, so that tests can check what emq does
//! for such callers (one that does not allow blocking, one that runs as the
//! calling user).
//!
//!     CALLER.CALL <flags> <command> [arg ...]
//!
//! `flags` are `RM_Call`'s format flags after `v` (`-` for none): `K` allows
//! blocking (without it the callee must not block), `C` runs the command as
//! the calling user (ACL checked), `E` returns errors as replies.

use std::os::raw::c_int;

use redis_module::{raw, redis_module, Context, RedisString, Status};

extern "C" fn call(
    ctx: *mut raw::RedisModuleCtx,
    argv: *mut *mut raw::RedisModuleString,
    argc: c_int,
) -> c_int {
    unsafe {
        if argc < 3 {
            return raw::RedisModule_WrongArity.unwrap()(ctx);
        }
        let args = std::slice::from_raw_parts(argv, argc as usize);
        let mut len = 0usize;
        let flags = raw::RedisModule_StringPtrLen.unwrap()(args[1], &mut len);
        let flags = std::slice::from_raw_parts(flags.cast::<u8>(), len);
        let mut fmt = b"v".to_vec();
        fmt.extend(flags.iter().filter(|&&b| b != b'-'));
        fmt.push(0);
        let name = raw::RedisModule_StringPtrLen.unwrap()(args[2], &mut len);
        let name =
            std::ffi::CString::new(std::slice::from_raw_parts(name.cast::<u8>(), len)).unwrap_or_default();
        let rest = &args[3..];
        let reply = raw::RedisModule_Call.unwrap()(
            ctx,
            name.as_ptr(),
            fmt.as_ptr().cast(),
            rest.as_ptr() as *mut *mut raw::RedisModuleString,
            rest.len(),
        );
        if reply.is_null() {
            let errno = std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
            let msg =
                std::ffi::CString::new(format!("ERR RM_Call failed, errno {errno}")).unwrap_or_default();
            return raw::RedisModule_ReplyWithError.unwrap()(ctx, msg.as_ptr());
        }
        // With `K`, a callee that blocks gives a promise. This module does
        // not wait for it: it lets go of it (the callee runs on, its reply
        // dropped when it comes) and says so. (Replying with the promise
        // would crash the server, and aborting it inside this call trips an
        // assertion.)
        if raw::RedisModule_CallReplyType.unwrap()(reply) == raw::REDISMODULE_REPLY_PROMISE as c_int {
            raw::RedisModule_FreeCallReply.unwrap()(reply);
            return raw::RedisModule_ReplyWithSimpleString.unwrap()(ctx, c"PROMISE".as_ptr());
        }
        raw::RedisModule_ReplyWithCallReply.unwrap()(ctx, reply);
        raw::RedisModule_FreeCallReply.unwrap()(reply);
        raw::REDISMODULE_OK as c_int
    }
}

fn init(ctx: &Context, _args: &[RedisString]) -> Status {
    let created = unsafe {
        raw::RedisModule_CreateCommand.unwrap()(
            ctx.ctx,
            c"caller.call".as_ptr(),
            Some(call),
            c"write".as_ptr(),
            0,
            0,
            0,
        )
    };
    if created == raw::REDISMODULE_OK as c_int {
        Status::Ok
    } else {
        Status::Err
    }
}

redis_module! {
    name: "caller",
    version: 1,
    allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
    data_types: [],
    init: init,
}
