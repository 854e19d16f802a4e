//! `make bench-peers`: emq beside the queue users would pick instead, BullMQ
//! (pinned, installed by the Makefile into a temporary folder and run with
//! Node), on the same Valkey 9.1 that this bench starts. The same lifecycle
//! for both — add a job, a worker takes it, completes it — with jobs added in
//! batches of 8 and workers waiting without polling (emq: 4 workers, WCLAIM
//! of weight 8 with BLOCK, ACK of the 8 under their token; BullMQ: a Worker
//! of concurrency 8). Measured: the server's time per job (`INFO
//! commandstats` µs summed over every command, divided by the jobs), its
//! CPU (user + sys) per job, jobs per second, and `MEMORY USAGE` per
//! waiting job. Output: a table, and `bench/peers.json`.

#[path = "../../tests/common/mod.rs"]
mod common;
// Shared with the report; not all of it is used here.
#[allow(dead_code)]
#[path = "../report/drive.rs"]
mod drive;

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{Server, Value};
use drive::*;

const JOBS: usize = 24_000;
const WAITING: usize = 10_000;
const P: &str = "emq:{peers}:";

#[derive(serde::Serialize)]
struct Result {
    system: &'static str,
    jobs: usize,
    server_usec_per_job: f64,
    server_cpu_usec_per_job: f64,
    jobs_per_sec: f64,
    bytes_per_waiting_job: f64,
}

impl Result {
    /// A run of JOBS jobs: the server's `usec` and CPU seconds for them, the
    /// run's wall time, and the memory WAITING waiting jobs held.
    fn of(system: &'static str, usec: u64, cpu: f64, seconds: f64, bytes: u64) -> Result {
        Result {
            system,
            jobs: JOBS,
            server_usec_per_job: usec as f64 / JOBS as f64,
            server_cpu_usec_per_job: cpu * 1e6 / JOBS as f64,
            jobs_per_sec: JOBS as f64 / seconds,
            bytes_per_waiting_job: bytes as f64 / WAITING as f64,
        }
    }
}

fn main() {
    let node_modules =
        std::env::var("EMQ_PEERS_NODE_MODULES").expect("EMQ_PEERS_NODE_MODULES: run `make bench-peers`");
    let server = Server::start();
    let mut c = server.conn();
    let version = common::info_text(&mut c, "server", "valkey_version").unwrap_or_default();

    let emq = emq(&server, &mut c);
    let bull = bullmq(&server, &mut c, &node_modules);

    println!("Valkey {version}: {JOBS} jobs added in batches of 8 and completed by waiting workers\n");
    println!(
        "{:<10} {:>18} {:>18} {:>12} {:>22}",
        "system", "server µs/job", "server CPU µs/job", "jobs/s", "bytes per waiting job"
    );
    for r in [&emq, &bull] {
        println!(
            "{:<10} {:>18.2} {:>18.2} {:>12.0} {:>22.0}",
            r.system,
            r.server_usec_per_job,
            r.server_cpu_usec_per_job,
            r.jobs_per_sec,
            r.bytes_per_waiting_job
        );
    }
    println!(
        "\nBullMQ / emq: {:.1}x the server time per job, {:.1}x the memory per waiting job",
        bull.server_usec_per_job / emq.server_usec_per_job,
        bull.bytes_per_waiting_job / emq.bytes_per_waiting_job
    );
    let report = serde_json::json!({ "server": format!("Valkey {version}"), "results": [emq, bull] });
    std::fs::create_dir_all("bench").expect("bench/");
    std::fs::write(
        "bench/peers.json",
        serde_json::to_string_pretty(&report).unwrap() + "\n",
    )
    .expect("bench/peers.json");
    println!("wrote bench/peers.json");
}

/// emq: one producer adding 8 jobs per ENQUEUE (one round trip each, as
/// BullMQ's addBulk), four workers claiming 8 at a time with BLOCK and
/// ACKing them under their token.
fn emq(server: &Server, c: &mut redis::Connection) -> Result {
    flush(c);
    let weights: Vec<Cmd> = (0..100)
        .map(|i| args(&["EMQ.WEIGHT", P, &format!("lane{i}"), "8"]))
        .collect();
    send(c, &weights);
    reset_stats(c);
    let cpu0 = server_cpu(c);
    let acked = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let mut w = server.conn();
            let (acked, stop) = (acked.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let reply: Value = redis::cmd("EMQ.WCLAIM")
                        .arg(P)
                        .arg(60_000)
                        .arg("BLOCK")
                        .arg(100)
                        .query(&mut w)
                        .unwrap();
                    let Value::Array(turn) = reply else { continue };
                    let (Some(Value::Int(token)), true) = (turn.get(1), turn.len() > 2) else {
                        continue;
                    };
                    let jobs: Vec<String> = turn[2..].iter().map(common::text).collect();
                    let n: u64 = redis::cmd("EMQ.ACK")
                        .arg(P)
                        .arg(*token)
                        .arg(&jobs)
                        .query(&mut w)
                        .unwrap();
                    acked.fetch_add(n, Ordering::Relaxed);
                }
            })
        })
        .collect();
    for i in (0..JOBS).step_by(8) {
        let mut enqueue = redis::cmd("EMQ.ENQUEUE");
        enqueue.arg(P).arg(format!("lane{}", (i / 8) % 100));
        for j in i..(i + 8).min(JOBS) {
            enqueue.arg(j).arg(format!("j{j}"));
        }
        let _: i64 = enqueue.query(c).unwrap();
    }
    while acked.load(Ordering::Relaxed) < JOBS as u64 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let seconds = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        let _ = w.join();
    }
    let usec: u64 = commandstats(c).values().map(|(_, usec)| usec).sum();
    let cpu = server_cpu(c) - cpu0;

    flush(c);
    let mut adds = Vec::new();
    for i in (0..WAITING).step_by(8) {
        let mut enqueue = args(&["EMQ.ENQUEUE", P, &format!("lane{}", (i / 8) % 100)]);
        for j in i..(i + 8).min(WAITING) {
            enqueue.extend([j.to_string().into_bytes(), format!("j{j}").into_bytes()]);
        }
        adds.push(enqueue);
    }
    send(c, &adds);
    let bytes = memory(c, &format!("{P}*"));
    Result::of("emq", usec, cpu, seconds, bytes)
}

/// BullMQ through its own client (`bullmq.cjs`).
fn bullmq(server: &Server, c: &mut redis::Connection, node_modules: &str) -> Result {
    let run = |jobs: usize, mode: &str| -> String {
        let out = Command::new("node")
            .arg(concat!(env!("CARGO_MANIFEST_DIR"), "/benches/peers/bullmq.cjs"))
            .arg(server.port.to_string())
            .arg(jobs.to_string())
            .arg(mode)
            .env("NODE_PATH", node_modules)
            .output()
            .expect("node runs");
        assert!(
            out.status.success(),
            "bullmq.cjs {mode}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    flush(c);
    reset_stats(c);
    let cpu0 = server_cpu(c);
    let printed = run(JOBS, "cycle");
    let usec: u64 = commandstats(c).values().map(|(_, usec)| usec).sum();
    let cpu = server_cpu(c) - cpu0;
    let seconds = serde_json::from_str::<serde_json::Value>(printed.trim())
        .ok()
        .and_then(|v| v["seconds"].as_f64())
        .expect("bullmq.cjs prints its time");
    flush(c);
    run(WAITING, "waiting");
    let bytes = memory(c, "bull:*");
    Result::of("BullMQ", usec, cpu, seconds, bytes)
}
