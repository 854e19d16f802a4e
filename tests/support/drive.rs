//! Random streams of commands over one queue: every command of
//! docs/commands.md's first part with arguments a host would send, drawn
//! from what the keyspace holds (lanes, jobs and their tokens), so that most
//! transitions hit. Used by the differential (native beside the twins), the
//! invariant runs and the replication runs.

use std::time::{Duration, Instant};

use super::invariants::View;
use super::rng::Rng;

mod edits;
mod run;

pub use run::{drive, flat_limits, run_native, FLAT_CLAIM};

pub const LANES: [&str; 4] = ["a", "b", "c", "d"];

/// One command: `EMQ.<name>` and its arguments after the prefix.
#[derive(Debug, Clone)]
pub struct Op {
    pub name: &'static str,
    pub args: Vec<String>,
}

impl Op {
    pub(super) fn new(name: &'static str, args: &[&str]) -> Op {
        Op {
            name,
            args: args.iter().map(|a| a.to_string()).collect(),
        }
    }

    /// The arguments with the prefix first.
    pub fn with_prefix(&self, p: &str) -> Vec<String> {
        std::iter::once(p.to_string())
            .chain(self.args.iter().cloned())
            .collect()
    }

    /// The job it names, for transitions.
    pub fn job(&self) -> Option<&str> {
        match self.name {
            "complete" | "retry" | "delay" | "extend" | "reassign" | "remove" | "reprocess" | "setdata"
            | "progress" | "log" => self.args.first().map(String::as_str),
            _ => None,
        }
    }
}

/// Draws the next command from what `v` (the queue's keyspace) holds.
pub struct Driver {
    pub rng: Rng,
    fresh: usize,
    /// When the last short lease or due-now delay was made: a sweep waits
    /// until it has surely passed on every clock (Redis 7.0 reads its wall
    /// clock once per command, not once per transaction).
    last_short: Instant,
    /// Whether the stream may pause the whole queue and drain lanes.
    pub rare: bool,
    /// The job last given a log line (logged again, so that trims happen).
    pub(super) logged: Option<String>,
}

impl Driver {
    pub fn new(seed: u64) -> Driver {
        Driver {
            rng: Rng::new(seed),
            fresh: 0,
            last_short: Instant::now(),
            rare: true,
            logged: None,
        }
    }

    fn lane(&mut self) -> &'static str {
        LANES[self.rng.below(LANES.len() as u64) as usize]
    }

    pub fn fresh_job(&mut self) -> String {
        self.fresh += 1;
        format!("JOB{:06}", self.fresh)
    }

    fn short(&mut self) -> &'static str {
        self.last_short = Instant::now();
        "1"
    }

    /// A lease: mostly long, sometimes 1 ms (it expires at once).
    fn lease(&mut self) -> &'static str {
        if self.rng.chance(1, 3) {
            self.short()
        } else {
            "600000"
        }
    }

    /// Waits until every 1 ms lease or due-now delay made so far has passed.
    fn settle(&self) {
        let since = self.last_short.elapsed();
        if since < Duration::from_millis(3) {
            std::thread::sleep(Duration::from_millis(3) - since);
        }
    }

    /// A job of the keyspace and a token for it: mostly its attempts, now
    /// and then a stale one.
    fn job_and_token(&mut self, v: &View, leased_first: bool) -> Option<(String, String)> {
        let leased: Vec<&String> = v.sets["active"].keys().collect();
        let all: Vec<&String> = v.rows.keys().collect();
        let pool = if leased_first && !leased.is_empty() && self.rng.chance(3, 4) {
            leased
        } else {
            all
        };
        if pool.is_empty() {
            return None;
        }
        let job = pool[self.rng.below(pool.len() as u64) as usize].clone();
        let attempts: i64 = v.rows[&job]
            .get("attempts")
            .and_then(|a| a.parse().ok())
            .unwrap_or(0);
        let token = if self.rng.chance(1, 10) {
            attempts + 1
        } else {
            attempts
        };
        Some((job, token.to_string()))
    }

    /// The next command. `flat` commands (`flat-enqueue`, `flat-claim`) are
    /// fixtures the caller runs with core commands.
    pub fn next(&mut self, v: &View) -> Op {
        loop {
            if let Some(op) = self.draw(v) {
                return op;
            }
        }
    }

    fn draw(&mut self, v: &View) -> Option<Op> {
        if self.rng.chance(1, 8) {
            return self.draw_edit(v);
        }
        let lane = self.lane();
        let roll = self.rng.below(100);
        Some(match roll {
            0..=13 => {
                let mut args = vec![lane.to_string()];
                for _ in 0..self.rng.range(1, 3) {
                    // Now and then a job that exists: a duplicate.
                    let job = match v.rows.keys().next() {
                        Some(old) if self.rng.chance(1, 12) => old.clone(),
                        _ => self.fresh_job(),
                    };
                    args.push(job.clone());
                    args.push(format!("payload of {job}"));
                }
                Op {
                    name: "enqueue",
                    args,
                }
            }
            14..=16 => {
                let job = self.fresh_job();
                if self.rng.chance(1, 2) {
                    return Some(Op::new("flat-enqueue", &[&job]));
                }
                let mut args = vec![job.clone(), format!("payload of {job}")];
                if self.rng.chance(1, 3) {
                    // A second pair: a new job, or one that exists.
                    let more = match v.rows.keys().next() {
                        Some(old) if self.rng.chance(1, 2) => old.clone(),
                        _ => self.fresh_job(),
                    };
                    args.push(more.clone());
                    args.push(format!("payload of {more}"));
                }
                Op {
                    name: "qenqueue",
                    args,
                }
            }
            17..=28 => {
                let lease = self.lease();
                let name = match self.rng.below(3) {
                    0 => "claim",
                    1 => "wclaim",
                    _ => "bclaim",
                };
                Op::new(name, &[lease])
            }
            29..=31 => {
                let lease = self.lease();
                match self.rng.below(3) {
                    0 => Op::new("flat-claim", &[lease]),
                    1 => Op::new("qclaim", &[lease]),
                    _ => {
                        let n = self.rng.range(1, 4).to_string();
                        Op::new("qbclaim", &[lease, &n])
                    }
                }
            }
            32..=43 => {
                let (job, token) = self.job_and_token(v, true)?;
                Op::new("complete", &[&job, &token])
            }
            44..=53 => {
                let (job, token) = self.job_and_token(v, true)?;
                let delay = if self.rng.chance(1, 2) {
                    self.short_delay()
                } else {
                    "600000"
                };
                let max = self.rng.range(1, 4).to_string();
                Op::new("retry", &[&job, &token, delay, &max, "it failed"])
            }
            54..=59 => {
                let (job, token) = self.job_and_token(v, true)?;
                if self.rng.chance(1, 4) {
                    let at = if self.rng.chance(1, 2) {
                        "1000"
                    } else {
                        "99999999999999"
                    };
                    Op::new("delay", &[&job, &token, "AT", at])
                } else {
                    let ms = if self.rng.chance(1, 2) {
                        self.short_delay()
                    } else {
                        "600000"
                    };
                    Op::new("delay", &[&job, &token, "IN", ms])
                }
            }
            60..=63 if self.rng.chance(1, 2) => {
                let (job, token) = self.job_and_token(v, true)?;
                let lease = self.lease();
                Op::new("extend", &[&job, &token, lease])
            }
            60..=63 => {
                let mut args = vec![self.lease().to_string()];
                for _ in 0..self.rng.range(1, 3) {
                    let (job, token) = self.job_and_token(v, true)?;
                    args.push(job);
                    args.push(token);
                }
                Op {
                    name: "mextend",
                    args,
                }
            }
            64..=70 => {
                self.settle();
                match self.rng.below(3) {
                    0 => Op::new("reap", &[]),
                    1 => {
                        let n = self.rng.range(1, 8).to_string();
                        Op::new("reap", &["GROUP", lane, "COUNT", &n])
                    }
                    _ => {
                        let m = self.rng.range(1, 3).to_string();
                        let n = self.rng.range(1, 100).to_string();
                        Op::new("reap", &["MAXSTALLED", &m, "COUNT", &n])
                    }
                }
            }
            71..=74 => {
                self.settle();
                let n = self.rng.range(1, 8).to_string();
                Op::new("promote", &["COUNT", &n])
            }
            75..=76 => {
                let job = match v.rows.keys().next() {
                    Some(old) if self.rng.chance(1, 8) => old.clone(),
                    _ => self.fresh_job(),
                };
                let payload = format!("payload of {job}");
                match self.rng.below(3) {
                    0 => {
                        let ms = self.short_delay();
                        Op::new("qschedule", &[&job, &payload, "IN", ms])
                    }
                    1 => Op::new("qschedule", &[&job, &payload, "IN", "600000"]),
                    _ => Op::new("qschedule", &[&job, &payload, "AT", "1000"]),
                }
            }
            77..=80 => {
                let w = self.rng.range(1, 4).to_string();
                Op::new("weight", &[lane, &w])
            }
            81..=84 => {
                let n = self.rng.range(1, 3).to_string();
                Op::new("limit", &[lane, &n])
            }
            85..=89 => Op::new(if self.rng.chance(1, 2) { "pause" } else { "resume" }, &[lane]),
            90..=94 => {
                let jobs: Vec<&String> = v.rows.keys().collect();
                let job = match jobs.is_empty() || self.rng.chance(1, 10) {
                    true => "JOB-none".to_string(),
                    false => jobs[self.rng.below(jobs.len() as u64) as usize].clone(),
                };
                Op::new("reassign", &[&job, lane])
            }
            95..=96 if self.rare => Op::new("drain", &[lane]),
            97..=99 if self.rare => Op::new(
                if self.rng.chance(2, 3) {
                    "qresume"
                } else {
                    "qpause"
                },
                &[],
            ),
            _ => return None,
        })
    }

    pub(super) fn short_delay(&mut self) -> &'static str {
        self.last_short = Instant::now();
        "0"
    }
}
