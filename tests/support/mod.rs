//! The test support, one file per concern: the server (`server`), the wire
//! (`resp`), the Lua twins called as EchoMQ's host calls them (`twins`),
//! keyspace snapshots (`snapshot`) and their invariants (`invariants`),
//! fixtures (`fixtures`), random streams of commands (`drive`, `rng`), and
//! replicas and the AOF (`replication`), clusters and a client that
//! follows them (`cluster`).
#![allow(dead_code, unused_imports)]

pub mod cluster;
pub mod cluster_client;
pub mod drive;
pub mod fixtures;
pub mod invariants;
pub mod replication;
pub mod resp;
pub mod rng;
pub mod server;
pub mod snapshot;
pub mod twins;

use std::time::{Duration, Instant};

pub use resp::{Conn, Reply, Value};
pub use server::Server;

/// Polls `ok` every few ms for up to 20 s (times `EMQ_SLOW`).
pub fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20) * server::slow();
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// One field of an `INFO` section.
pub fn info_field(c: &mut Conn, section: &str, field: &str) -> Option<String> {
    let info = c.cmd(&["INFO", section]).ok()?.text();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")).map(|v| v.trim().to_string()))
}

/// An `INFO emq` counter.
pub fn emq_stat(c: &mut Conn, name: &str) -> u64 {
    info_field(c, "emq", &format!("emq_{name}"))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}
