//! `make bench-peers`: emq beside the queue users would pick instead, BullMQ
//! (pinned, installed by the Makefile into a temporary folder and run with
//! Node), on the same Valkey 9.1 that this bench starts. The same lifecycle
//! for both — add a job, a worker takes it, completes it — with jobs added in
//! batches of 8 and workers waiting without polling (emq: 4 workers, WCLAIM
//! of weight 8 with BLOCK, COMPLETE of each with its attempts; BullMQ: a Worker
//! of concurrency 8). Measured: the server's time per job (`INFO
//! commandstats` µs summed over every command, divided by the jobs), its
//! CPU (user + sys) per job, jobs per second, and `MEMORY USAGE` per
//! waiting job. Output: a table, and `bench/peers.json`.

#[path = "../../tests/support/mod.rs"]
mod support;
// Shared with the report; not all of it is used here.
#[allow(dead_code)]
#[path = "../report/drive.rs"]
mod drive;

use std::process::Command;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use drive::*;
use support::{Conn, Server, Value};

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
    let version = support::info_field(&mut c, "server", "valkey_version").unwrap_or_default();

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
/// completing them in one pipelined round trip. Payloads are `{}`, as
/// BullMQ's job data here.
fn emq(server: &Server, c: &mut Conn) -> Result {
    flush(c);
    let weights: Vec<Cmd> = (0..100)
        .map(|i| args(&["EMQ.WEIGHT", P, &format!("l{i}"), "8"]))
        .collect();
    send(c, &weights);
    reset_stats(c);
    let cpu0 = server_cpu(c);
    let completed = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let start = Instant::now();
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let mut w = server.conn();
            let (completed, stop) = (completed.clone(), stop.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let reply = w.ok(&["EMQ.WCLAIM", P, "60000", "BLOCK", "100"]);
                    let completes: Vec<Cmd> = jobs(&reply)
                        .iter()
                        .map(|(id, attempts)| args(&["EMQ.COMPLETE", P, id, attempts]))
                        .collect();
                    let (done, _) = send(&mut w, &completes);
                    let n = done.iter().filter(|v| **v == Value::Int(1)).count();
                    completed.fetch_add(n as u64, Ordering::Relaxed);
                }
            })
        })
        .collect();
    send(c, &enqueues(JOBS));
    while completed.load(Ordering::Relaxed) < JOBS as u64 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let seconds = start.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().expect("a worker");
    }
    let usec: u64 = commandstats(c).values().map(|(_, usec)| usec).sum();
    let cpu = server_cpu(c) - cpu0;

    flush(c);
    send(c, &enqueues(WAITING));
    let bytes = memory(c, &format!("{P}*"));
    Result::of("emq", usec, cpu, seconds, bytes)
}

/// `n` jobs, 8 per ENQUEUE, over 100 lanes.
fn enqueues(n: usize) -> Vec<Cmd> {
    (0..n)
        .step_by(8)
        .map(|i| {
            let mut enqueue = args(&["EMQ.ENQUEUE", P, &format!("l{}", (i / 8) % 100)]);
            for j in i..(i + 8).min(n) {
                enqueue.extend([format!("JOB-{j}").into_bytes(), b"{}".to_vec()]);
            }
            enqueue
        })
        .collect()
}

/// BullMQ through its own client (`bullmq.cjs`).
fn bullmq(server: &Server, c: &mut Conn, node_modules: &str) -> Result {
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
