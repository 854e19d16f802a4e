//! `make bench`: the native commands against their Lua twins on one server
//! that this bench starts, in one run; figures from the server's own `INFO
//! commandstats`. `drive.rs` sends and reads, `scenarios.rs` holds what is
//! measured, `output.rs` what is printed and written: a table on stdout,
//! `bench/report.json` and the chart `bench/report.svg`.
//!
//! `EMQ_BENCH_ONLY=<part of a scenario name>` (or `=<a whole name>`) runs
//! some scenarios (and leaves the committed report alone);
//! `EMQ_BENCH_NATIVE_ONLY=1` skips the Lua blocks (`make profile`).

#[path = "../../tests/common/mod.rs"]
mod common;
mod drive;
mod output;
mod scenarios;

use std::time::Duration;

use common::{Server, Twins};
use drive::set_config;
use scenarios::{selected, Bench, ROUNDS};

fn main() {
    // `cargo bench` passes `--bench`; a filter, if any, is ignored.
    let server = Server::start();
    let mut c = server.conn();
    let twins = Twins::load(&mut c);
    let mut bench = Bench { server, c, twins };
    let version = match common::info_text(&mut bench.c, "server", "valkey_version") {
        Some(v) => format!("Valkey {v}"),
        None => format!(
            "Redis {}",
            common::info_text(&mut bench.c, "server", "redis_version").unwrap_or_default()
        ),
    };

    // Every claim scenario in both replication modes; with `command` a claim
    // replicates as one EMQ.TURN, ENQUEUE and ACK as themselves (replicas
    // need the module). The lane-count scenarios and REAP (which replicates
    // its effects in both modes) run once.
    const COMMAND: &str = ", emq.replicate command";
    let mut rows = Vec::new();
    for (mode, suffix) in [("effects", ""), ("command", COMMAND)] {
        set_config(&mut bench.c, "emq.replicate", mode);
        bench.claim_scenarios(&mut rows, suffix);
        if mode == "effects" {
            bench.lane_count_scenarios(&mut rows);
        }
    }
    // Last among the claim scenarios: once a replica has attached, the server
    // keeps a replication backlog, and every later write would feed it.
    for (mode, suffix) in [("effects", ""), ("command", COMMAND)] {
        let name = format!("WCLAIM K=1, 100 lanes, a replica attached{suffix}");
        if selected(&name) {
            set_config(&mut bench.c, "emq.replicate", mode);
            rows.push(bench.with_replica(&name));
        }
    }
    set_config(&mut bench.c, "emq.replicate", "effects");

    let mut waits = Vec::new();
    if selected("workers") {
        for blocking in [true, false] {
            waits.push(bench.waiting(blocking, 1_000, Duration::from_millis(2), 4));
        }
    }

    output::print_table(&rows, &waits, &version, ROUNDS);
    if std::env::var_os("EMQ_BENCH_ONLY").is_some() {
        return; // a partial run: the report of the full run stays
    }
    std::fs::create_dir_all("bench").expect("bench/");
    std::fs::write("bench/report.json", output::json(&rows, &waits, &version)).expect("bench/report.json");
    output::chart(&rows, &version, "bench/report.svg").expect("bench/report.svg");
    println!("\nwrote bench/report.json and bench/report.svg");
}
