//! emq: EchoMQ's fair, weighted lane scheduling as native Valkey commands.
//!
//! This file registers the module: its configs and `INFO emq` through the
//! crate's `redis_module!`; the commands and the `emq` ACL category by hand
//! (`ffi/register.rs` says why for each), the commands from the table in
//! `catalog.rs`. ARCHITECTURE.md draws the layers: each imports only those
//! below it (`tests/layering.rs` keeps it so).
//! Every `unsafe` line lives under `ffi/`: the rest of the crate may not
//! have any.
#![deny(unsafe_code)]
#![deny(clippy::undocumented_unsafe_blocks)]
// A unit-test build has no module entry points (`module` below), so what
// only they reach looks unused there; the module's own build still checks.
#![cfg_attr(test, allow(dead_code, unused_imports))]

// Public for the benches: the pure rules. The rest is the module's own
// (nothing outside it may reach the server's pointers).
mod catalog;
mod commands;
mod engine;
#[allow(unsafe_code)]
mod ffi;
mod info;
pub mod model;
mod queue;
mod runtime;

#[cfg(not(test))]
#[allow(unsafe_code)] // the macro's expansion: the module's entry points
mod module {
    use redis_module::configuration::ConfigurationFlags;
    // RedisResult: a name the macro's expansion expects here.
    use redis_module::{redis_module, Context, InfoContext, RedisResult, RedisString, Status};

    use crate::runtime::config::{self, Replicate};

    fn init(ctx: &Context, args: &[RedisString]) -> Status {
        if let Some(name) = crate::ffi::missing_api() {
            ctx.log_warning(&format!("emq: this server lacks {name}; not loading"));
            return Status::Err;
        }
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_slice()).collect();
        let debug_panic = match config::check_module_args(&args) {
            Ok(debug_panic) => debug_panic,
            Err(e) => {
                ctx.log_warning(&format!("emq: {e}; not loading"));
                return Status::Err;
            }
        };
        crate::ffi::detect_server(ctx);
        crate::ffi::set_module_options(ctx);
        // A panic (caught at the boundary) is reported in the server's log,
        // without a backtrace walk on the server's thread.
        std::panic::set_hook(Box::new(|info| {
            crate::ffi::log_warning(&format!("emq: panic: {info}"))
        }));
        let category = crate::ffi::register::acl_category(ctx, "emq").then_some("emq");
        if category.is_none() {
            ctx.log_notice("emq: no emq ACL category here (the server has no custom categories)");
        }
        let table = crate::ffi::register::Table {
            len: crate::catalog::COMMANDS.len(),
            spec: crate::catalog::spec,
            run: crate::catalog::run,
        };
        if let Err(e) = crate::ffi::register::commands(ctx, table, category) {
            ctx.log_warning(&format!("emq: could not register the commands: {e}"));
            drop(std::panic::take_hook());
            return Status::Err;
        }
        // Slots come and go in a cluster: commands check their queue's
        // slot against a view read on every tick; figures leave with an
        // exported slot.
        crate::ffi::events::subscribe(
            ctx,
            crate::ffi::events::Handlers {
                tick: crate::runtime::cluster::refresh,
                slots_gone: crate::engine::figures::forget_slots,
            },
        );
        // A test hook, only with `loadmodule … debug-panic`: proves that a
        // panic becomes an error reply and the server lives on.
        if debug_panic {
            if !crate::ffi::register::debug_panic_command(ctx) {
                drop(std::panic::take_hook());
                return Status::Err;
            }
            ctx.log_warning("emq: loaded with debug-panic: EMQ.DEBUG-PANIC panics on purpose");
        }
        ctx.log_notice(&format!(
            "emq {} ({}) loaded",
            env!("CARGO_PKG_VERSION"),
            env!("EMQ_GIT_COMMIT")
        ));
        Status::Ok
    }

    fn deinit(ctx: &Context) -> Status {
        crate::ffi::with_module_ctx(ctx, crate::engine::timer::stop_all);
        crate::engine::figures::clear();
        crate::ffi::release_constants();
        crate::ffi::release_names();
        // Back to the default hook: ours must not outlive the unloaded module.
        drop(std::panic::take_hook());
        Status::Ok
    }

    redis_module! {
        name: "emq",
        version: env!("EMQ_VERSION_NUMBER").parse::<i32>().unwrap_or(0),
        allocator: (crate::ffi::alloc::ModuleAlloc, crate::ffi::alloc::ModuleAlloc),
        data_types: [],
        init: init,
        deinit: deinit,
        info: info,
        configurations: [
            i64: [
                [config::MAX_CLAIM_NAME, &config::MAX_CLAIM, config::MAX_CLAIM_DEFAULT, 1, i64::MAX, ConfigurationFlags::DEFAULT, None],
                [config::REAP_ON_CLAIM_NAME, &config::REAP_ON_CLAIM, config::REAP_ON_CLAIM_DEFAULT, 0, 1_000_000, ConfigurationFlags::DEFAULT, None],
                [config::STATS_WINDOW_NAME, &config::STATS_WINDOW, config::STATS_WINDOW_DEFAULT, 10, 86_400_000, ConfigurationFlags::DEFAULT, None],
                [config::STATS_LANES_NAME, &config::STATS_LANES, config::STATS_LANES_DEFAULT, 0, 10_000_000, ConfigurationFlags::DEFAULT, None],
                [config::MAX_PASSES_NAME, &config::MAX_PASSES, config::MAX_PASSES_DEFAULT, 0, 1_000_000, ConfigurationFlags::DEFAULT, None],
            ],
            string: [
                [config::JOB_KIND_NAME, &config::JOB_KIND, config::JOB_KIND_DEFAULT, ConfigurationFlags::DEFAULT, None],
            ],
            bool: [],
            enum: [
                [config::REPLICATE_NAME, &config::REPLICATE, Replicate::effects, ConfigurationFlags::DEFAULT, None],
            ],
            module_args_as_configuration: true,
        ]
    }

    fn info(ctx: &InfoContext, _for_crash_report: bool) {
        crate::info::emq(ctx);
    }
}
