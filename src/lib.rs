//! emq: EchoMQ's fair, weighted lane scheduling as native Valkey commands.
//! This file registers the commands and nothing else.

pub mod args;
pub mod commands;
pub mod errors;
#[cfg(not(test))]
mod info;
pub mod keys;
pub mod schedule;
pub mod state;
pub mod store;

#[cfg(not(test))]
mod module {
    use std::ffi::CStr;
    use std::os::raw::c_int;

    use redis_module::{raw, redis_module, Context, RedisString, Status};

    use crate::command_callback;
    use crate::commands::{claim, lanes, lifecycle};

    /// name, callback, flags (first key = last key = the prefix, argument 1).
    const COMMANDS: &[(&CStr, raw::RedisModuleCmdFunc, &CStr)] = &[
        (c"emq.claim", command_callback!(claim::claim), c"write fast"),
        (c"emq.wclaim", command_callback!(claim::wclaim), c"write fast"),
        (c"emq.weight", command_callback!(lanes::weight), c"write fast"),
        (
            c"emq.enqueue",
            command_callback!(lifecycle::enqueue),
            c"write deny-oom fast",
        ),
        (c"emq.ack", command_callback!(lifecycle::ack), c"write fast"),
        (c"emq.nack", command_callback!(lifecycle::nack), c"write fast"),
        (c"emq.extend", command_callback!(lifecycle::extend), c"write fast"),
        (c"emq.reap", command_callback!(lifecycle::reap), c"write"),
        // These may remove a lane from the ring at an unknown position (LREM).
        (c"emq.limit", command_callback!(lanes::limit), c"write"),
        (c"emq.pause", command_callback!(lanes::pause), c"write"),
        (c"emq.resume", command_callback!(lanes::resume), c"write"),
        (c"emq.reassign", command_callback!(lanes::reassign), c"write"),
        (c"emq.lane", command_callback!(lanes::lane), c"readonly"),
    ];

    fn init(ctx: &Context, _args: &[RedisString]) -> Status {
        if let Some(name) = crate::store::missing_api() {
            ctx.log_warning(&format!("emq: this server lacks {name}; not loading"));
            return Status::Err;
        }
        crate::store::detect_score_format();
        for (name, callback, flags) in COMMANDS {
            let created = unsafe {
                raw::RedisModule_CreateCommand
                    .map(|create| create(ctx.ctx, name.as_ptr(), *callback, flags.as_ptr(), 1, 1, 1))
            };
            if created != Some(raw::REDISMODULE_OK as c_int) {
                ctx.log_warning(&format!("emq: could not register {name:?}"));
                return Status::Err;
            }
        }
        unsafe {
            if let Some(register) = raw::RedisModule_RegisterInfoFunc {
                register(ctx.ctx, Some(crate::info::info));
            }
        }
        ctx.log_notice(&format!(
            "emq {} ({}) loaded",
            env!("CARGO_PKG_VERSION"),
            env!("EMQ_GIT_COMMIT")
        ));
        Status::Ok
    }

    redis_module! {
        name: "emq",
        version: env!("EMQ_VERSION_NUMBER").parse::<i32>().unwrap_or(0),
        allocator: (redis_module::alloc::RedisAlloc, redis_module::alloc::RedisAlloc),
        data_types: [],
        init: init,
    }
}
