//! `INFO emq`: which build is loaded (version and commit, baked in by
//! build.rs), the configs in force, and the counters of `stats.rs`.

use redis_module::{InfoContext, RedisResult};

use crate::runtime::{config, stats};

pub fn emq(ctx: &InfoContext) {
    if let Err(e) = build(ctx) {
        crate::ffi::log_warning(&format!("emq: INFO emq: {e}"));
    }
}

fn build(ctx: &InfoContext) -> RedisResult<()> {
    // An empty section name gives the module's own: `# emq`; every field is
    // prefixed `emq_` by the server.
    let mut section = ctx
        .builder()
        .add_section("")
        .field("version", env!("CARGO_PKG_VERSION"))?
        .field("commit", env!("EMQ_GIT_COMMIT"))?
        .field("max_claim", config::max_claim())?
        .field("reap_on_claim", config::reap_on_claim() as u64)?
        .field(
            "job_kind",
            String::from_utf8_lossy(&config::job_kind()).into_owned(),
        )?
        .field(
            "replicate",
            if config::replicate_command() {
                "command"
            } else {
                "effects"
            },
        )?;
    for (name, value) in stats::fields() {
        section = section.field(name, value)?;
    }
    let (lanes, leases, bytes) = crate::engine::figures::info();
    section = section
        .field("stats_window", config::stats_window() as u64)?
        .field("stats_lanes_max", config::stats_lanes() as u64)?
        .field("stats_lanes", lanes as u64)?
        .field("stats_leases", leases as u64)?
        .field("stats_bytes", bytes as u64)?;
    section.build_section()?.build_info()?;
    Ok(())
}
