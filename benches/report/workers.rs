//! Workers waiting for a steady arrival of jobs: blocking (`WCLAIM … BLOCK`,
//! woken by the ENQUEUE) against polling (a plain WCLAIM, then 1 ms of
//! sleep when it serves nothing), 1, 4 and 16 of them. What a blocking
//! claim saves is server CPU and pickup latency.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use super::drive::*;
use super::output::Waiting;
use super::support::Value;
use super::Bench;

fn now_us() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_micros()
}

impl Bench {
    pub fn worker_scenarios(&mut self, waits: &mut Vec<Waiting>) {
        if !selected("workers") {
            return;
        }
        for workers in [1, 4, 16] {
            for blocking in [true, false] {
                waits.push(self.waiting(blocking, workers, 1_000, Duration::from_millis(2)));
            }
        }
    }

    /// `jobs` jobs, one every `every`, into 10 lanes; each worker claims
    /// and completes. The payload is the time the job was sent, in µs.
    fn waiting(&mut self, blocking: bool, workers: usize, jobs: usize, every: Duration) -> Waiting {
        let p = "w{q}:";
        let mut c = self.server.conn();
        flush(&mut c);
        reset_stats(&mut c);
        let cpu0 = server_cpu(&mut c);
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel::<f64>();
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let mut w = self.server.conn();
                let (stop, tx) = (stop.clone(), tx.clone());
                std::thread::spawn(move || {
                    let claim: &[&str] = if blocking {
                        &["EMQ.WCLAIM", p, "60000", "BLOCK", "100"]
                    } else {
                        &["EMQ.WCLAIM", p, "60000"]
                    };
                    while !stop.load(Ordering::Relaxed) {
                        let reply = w.ok(claim);
                        if reply.items().is_empty() {
                            if !blocking {
                                std::thread::sleep(Duration::from_millis(1));
                            }
                            continue;
                        }
                        let at = now_us();
                        for job in reply.items() {
                            let [id, payload, attempts, ..] = job.items() else {
                                panic!("a job: {job:?}")
                            };
                            let sent: u128 = payload.text().parse().unwrap_or(at);
                            let _ = tx.send(at.saturating_sub(sent) as f64 / 1000.0);
                            let done = w.ok(&["EMQ.COMPLETE", p, &id.text(), &attempts.text()]);
                            assert_eq!(done, Value::Int(1), "COMPLETE of a job just claimed");
                        }
                    }
                })
            })
            .collect();
        let start = Instant::now();
        for i in 0..jobs {
            if let Some(wait) = (start + every * i as u32).checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            c.ok(&[
                "EMQ.ENQUEUE",
                p,
                &format!("l{}", i % 10),
                &format!("JOB-{i}"),
                &now_us().to_string(),
            ]);
        }
        let mut pickups: Vec<f64> = (0..jobs)
            .map(|_| {
                rx.recv_timeout(Duration::from_secs(10))
                    .expect("every job picked up")
            })
            .collect();
        stop.store(true, Ordering::Relaxed);
        for h in handles {
            h.join().expect("a worker");
        }
        let cpu = server_cpu(&mut c) - cpu0;
        let claims = commandstats(&mut c)
            .get("emq.wclaim")
            .map_or(0, |(calls, _)| *calls);
        pickups.sort_by(f64::total_cmp);
        let pct = |q: f64| pickups[((pickups.len() as f64 - 1.0) * q) as usize];
        let how = if blocking {
            "blocking (BLOCK)"
        } else {
            "polling every 1 ms"
        };
        Waiting {
            mode: format!("{workers} {how}"),
            jobs,
            server_cpu_s: cpu,
            claim_calls: claims,
            pickup_ms_p50: pct(0.5),
            pickup_ms_p99: pct(0.99),
        }
    }
}
