//! `INFO emq`: which build is loaded (version and commit, baked in by
//! build.rs), the `emq.max-claim` and `emq.replicate` in force, and the
//! counters of `stats.rs`.

use std::ffi::CString;
use std::os::raw::c_int;

use redis_module::raw;

use crate::stats;

pub(crate) extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    unsafe {
        let (Some(section), Some(text), Some(number)) = (
            raw::RedisModule_InfoAddSection,
            raw::RedisModule_InfoAddFieldCString,
            raw::RedisModule_InfoAddFieldULongLong,
        ) else {
            return;
        };
        // An empty section name gives the module's own: `# emq`.
        section(ctx, c"".as_ptr());
        let version = concat!(env!("CARGO_PKG_VERSION"), "\0");
        let commit = concat!(env!("EMQ_GIT_COMMIT"), "\0");
        text(ctx, c"version".as_ptr(), version.as_ptr().cast());
        text(ctx, c"commit".as_ptr(), commit.as_ptr().cast());
        number(ctx, c"max_claim".as_ptr(), stats::max_claim() as u64);
        let mode = if stats::replicate_command() {
            c"command"
        } else {
            c"effects"
        };
        text(ctx, c"replicate".as_ptr(), mode.as_ptr());
        for (name, value) in stats::fields() {
            if let Ok(name) = CString::new(name) {
                number(ctx, name.as_ptr(), value);
            }
        }
    }
}
