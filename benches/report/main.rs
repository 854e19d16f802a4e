//! `make bench`: the native commands against their Lua twins — called as
//! EchoMQ's host calls its scripts — on one server that this bench starts,
//! in one run; figures from the server's own `INFO commandstats`.
//! `drive.rs` sends and reads; `claims.rs`, `lifecycle.rs`, `workers.rs`
//! and `throughput.rs` hold what is measured; `output.rs` what is printed and written: a table
//! on stdout, `bench/report.json` and the chart `bench/report.svg`. How to
//! read them: docs/performance.md.
//!
//! `EMQ_BENCH_ONLY=<part of a scenario name>` (or `=<a whole name>`) runs
//! some scenarios (and leaves the committed report alone);
//! `EMQ_BENCH_NATIVE_ONLY=1` skips the Lua blocks (`make profile`).

#[path = "../../tests/support/mod.rs"]
mod support;

mod claims;
mod drive;
mod figures;
mod flat;
mod lifecycle;
mod output;
mod probe;
mod throughput;
mod workers;

use claims::ROUNDS;
use drive::{c_floor_loaded, selected, set_config};
use support::twins::Twins;
use support::{Conn, Server};

pub struct Bench {
    pub server: Server,
    pub c: Conn,
    pub twins: Twins,
    pub probe: probe::Probe,
}

fn main() {
    // `cargo bench` passes `--bench`; a filter, if any, is ignored.
    let server = Server::start();
    let mut c = server.conn();
    let twins = Twins::load(&mut c);
    let probe = probe::Probe::new(&mut c);
    let mut bench = Bench {
        server,
        c,
        twins,
        probe,
    };
    let version = match support::info_field(&mut bench.c, "server", "valkey_version") {
        Some(v) => format!("Valkey {v}"),
        None => format!(
            "Redis {}",
            support::info_field(&mut bench.c, "server", "redis_version").unwrap_or_default()
        ),
    };

    // Every claim and cycle scenario in both replication modes; with
    // `command` a deterministic command replicates as itself (replicas need
    // the module). The once-only scenarios and the sweeps run in `effects`.
    const COMMAND: &str = ", emq.replicate command";
    let mut rows = Vec::new();
    for (mode, suffix) in [("effects", ""), ("command", COMMAND)] {
        set_config(&mut bench.c, "emq.replicate", mode);
        if c_floor_loaded() {
            bench.c.ok(&["FLOOR.REPLICATE", mode]);
        }
        bench.claim_scenarios(&mut rows, suffix);
        bench.lifecycle_scenarios(&mut rows, suffix);
        bench.flat_scenarios(&mut rows, suffix);
        if mode == "effects" {
            bench.once_scenarios(&mut rows);
            bench.sweep_scenarios(&mut rows);
        }
    }
    // Last among the server-time scenarios: once a replica has attached,
    // the server keeps a replication backlog, and every later write feeds it.
    for (mode, suffix) in [("effects", ""), ("command", COMMAND)] {
        let name = format!("WCLAIM K=1, 100 lanes, a replica attached{suffix}");
        if selected(&name) {
            set_config(&mut bench.c, "emq.replicate", mode);
            rows.push(bench.with_replica(&name));
        }
    }
    set_config(&mut bench.c, "emq.replicate", "effects");

    let mut waits = Vec::new();
    bench.worker_scenarios(&mut waits);
    let mut flows = Vec::new();
    bench.throughput_scenarios(&mut flows);
    let memory = bench.figures_memory();

    output::print_table(&rows, &waits, &flows, &version, ROUNDS);
    bench.probe.report();
    if let Some(m) = &memory {
        figures::print(m);
    }
    if std::env::var_os("EMQ_BENCH_ONLY").is_some() {
        return; // a partial run: the report of the full run stays
    }
    std::fs::create_dir_all("bench").expect("bench/");
    std::fs::write("bench/report.json", output::json(&rows, &waits, &flows, &version))
        .expect("bench/report.json");
    output::chart(&rows, &version, "bench/report.svg").expect("bench/report.svg");
    println!("\nwrote bench/report.json and bench/report.svg");
}
