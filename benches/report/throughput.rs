//! Throughput as a user would quote it: jobs per second end to end, and the
//! server CPU they cost. A producer enqueues as fast as it can (batches of
//! 8 jobs into 10 lanes, pipelined) while 1, 4 or 16 workers claim and
//! complete no-op jobs: natively with `WCLAIM … BLOCK` and `COMPLETE` of
//! each job with its attempts; on the twins as EchoMQ's host calls them
//! (its pause check and `@gwclaim`, 1 ms of sleep when served nothing,
//! `@complete`; `@genqueue` per job). The clock runs from the first enqueue
//! to the last completion.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::drive::*;
use super::support::twins::{Host, Twins};
use super::support::{Conn, Value};
use super::Bench;

/// Jobs per run.
const JOBS: usize = 16_000;
/// Jobs per ENQUEUE (per lane), and ENQUEUEs per round trip of the producer.
const BATCH: usize = 8;
const PIPELINE: usize = 16;

/// One run: a side, its worker count, and what it achieved.
#[derive(Serialize)]
pub struct Throughput {
    pub side: &'static str,
    pub workers: usize,
    pub jobs: usize,
    pub seconds: f64,
    pub jobs_per_second: f64,
    pub server_cpu_us_per_job: f64,
}

impl Bench {
    pub fn throughput_scenarios(&mut self, out: &mut Vec<Throughput>) {
        if !selected("throughput") {
            return;
        }
        for workers in [1, 4, 16] {
            out.push(self.saturate(Side::Native, workers));
            if !native_only() {
                out.push(self.saturate(Side::Lua, workers));
            }
        }
    }

    fn saturate(&mut self, side: Side, workers: usize) -> Throughput {
        let p = "t{q}:";
        flush(&mut self.c);
        let cpu0 = server_cpu(&mut self.c);
        let done = AtomicUsize::new(0);
        let stop = AtomicBool::new(false);
        let twins = &self.twins;
        let start = Instant::now();
        std::thread::scope(|s| {
            for _ in 0..workers {
                let mut w = self.server.conn();
                let (done, stop) = (&done, &stop);
                s.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        let n = match side {
                            Side::Native => work_native(&mut w, p),
                            Side::Lua => work_twin(&mut w, twins, p),
                            Side::Floor => unreachable!("a flow runs native or twins"),
                        };
                        done.fetch_add(n, Ordering::Relaxed);
                    }
                });
            }
            let mut producer = self.server.conn();
            produce(&mut producer, twins, side, p);
            while done.load(Ordering::Relaxed) < JOBS {
                std::thread::sleep(Duration::from_micros(200));
            }
            stop.store(true, Ordering::Relaxed);
        });
        let seconds = start.elapsed().as_secs_f64();
        let cpu = server_cpu(&mut self.c) - cpu0;
        assert_eq!(done.load(Ordering::Relaxed), JOBS, "every job completed once");
        Throughput {
            side: match side {
                Side::Native => "native",
                Side::Lua => "twins",
                Side::Floor => unreachable!("a flow runs native or twins"),
            },
            workers,
            jobs: JOBS,
            seconds,
            jobs_per_second: JOBS as f64 / seconds,
            server_cpu_us_per_job: cpu * 1e6 / JOBS as f64,
        }
    }
}

/// Every job enqueued, `BATCH` per call, `PIPELINE` calls per round trip.
fn produce(c: &mut Conn, twins: &Twins, side: Side, p: &str) {
    let (mut serial, mut enqueued) = (0usize, 0i64);
    while serial < JOBS {
        let mut cmds: Vec<Cmd> = Vec::new();
        for _ in 0..PIPELINE {
            if serial >= JOBS {
                break;
            }
            let lane = format!("l{}", (serial / BATCH) % 10);
            let mut argv: Vec<Vec<u8>> = vec![p.into(), lane.into_bytes()];
            for _ in 0..BATCH.min(JOBS - serial) {
                argv.push(format!("JOB-{serial:08}").into_bytes());
                argv.push(b"{}".to_vec());
                serial += 1;
            }
            match side {
                Side::Native => {
                    let mut cmd = vec![b"EMQ.ENQUEUE".to_vec()];
                    cmd.extend(argv);
                    cmds.push(cmd);
                }
                Side::Lua => {
                    let refs: Vec<&[u8]> = argv.iter().map(Vec::as_slice).collect();
                    match twins.host(c, "enqueue", &refs) {
                        Host::Calls(calls) => cmds.extend(calls),
                        Host::Answer(v) => panic!("ENQUEUE answered without a script: {v:?}"),
                    }
                }
                Side::Floor => unreachable!("a flow runs native or twins"),
            }
        }
        for reply in c.pipeline(&cmds).expect("the producer's batch") {
            enqueued += reply.expect("an enqueue").int();
        }
    }
    assert_eq!(enqueued, JOBS as i64, "every job enqueued");
}

/// One native claim (waiting up to 100 ms) and the completion of what it
/// served; the jobs completed.
fn work_native(w: &mut Conn, p: &str) -> usize {
    let reply = w.ok(&["EMQ.WCLAIM", p, "60000", "BLOCK", "100"]);
    complete_all(&reply, |id, attempts| w.ok(&["EMQ.COMPLETE", p, id, attempts]))
}

/// One claim as EchoMQ's host makes it on the twins, 1 ms of sleep when it
/// served nothing, and the completion of what it served.
fn work_twin(w: &mut Conn, twins: &Twins, p: &str) -> usize {
    let reply = twins
        .like_native(w, "wclaim", &[p.as_bytes(), b"60000"])
        .expect("@gwclaim");
    if reply.items().is_empty() {
        std::thread::sleep(Duration::from_millis(1));
        return 0;
    }
    complete_all(&reply, |id, attempts| {
        twins
            .like_native(w, "complete", &[p.as_bytes(), id.as_bytes(), attempts.as_bytes()])
            .expect("@complete")
    })
}

fn complete_all(reply: &Value, mut complete: impl FnMut(&str, &str) -> Value) -> usize {
    let mut n = 0;
    for (id, attempts) in jobs(reply) {
        assert_eq!(
            complete(&id, &attempts),
            Value::Int(1),
            "COMPLETE of a job just claimed"
        );
        n += 1;
    }
    n
}
