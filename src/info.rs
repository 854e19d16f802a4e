//! `INFO emq`: which build is loaded (version and commit, baked in by build.rs).

use std::os::raw::c_int;

use redis_module::raw;

pub(crate) extern "C" fn info(ctx: *mut raw::RedisModuleInfoCtx, _for_crash_report: c_int) {
    unsafe {
        let (Some(section), Some(field)) = (
            raw::RedisModule_InfoAddSection,
            raw::RedisModule_InfoAddFieldCString,
        ) else {
            return;
        };
        // An empty section name gives the module's own: `# emq`.
        section(ctx, c"".as_ptr());
        let version = concat!(env!("CARGO_PKG_VERSION"), "\0");
        let commit = concat!(env!("EMQ_GIT_COMMIT"), "\0");
        field(ctx, c"version".as_ptr(), version.as_ptr().cast());
        field(ctx, c"commit".as_ptr(), commit.as_ptr().cast());
    }
}
