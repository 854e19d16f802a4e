//! The stream's draws of a job's edits and EchoMQ's metric reads (SPEC
//! section 9).

use super::super::invariants::View;
use super::super::rng::Rng;
use super::{Driver, Op, LANES};

impl Driver {
    /// A job's edit (SPEC section 9): data, progress, a log line, a removal,
    /// a reprocess (mostly of a dead job), now and then a drain.
    pub(super) fn draw_edit(&mut self, v: &View) -> Option<Op> {
        let pick = |rng: &mut Rng, pool: Vec<&String>| -> String {
            if pool.is_empty() || rng.chance(1, 10) {
                "JOB-none".to_string()
            } else {
                pool[rng.below(pool.len() as u64) as usize].clone()
            }
        };
        let job = pick(&mut self.rng, v.rows.keys().collect());
        Some(match self.rng.below(7) {
            0 => Op::new("setdata", &[&job, "new payload"]),
            1 => {
                let n = self.rng.below(101).to_string();
                Op::new("progress", &[&job, &n])
            }
            2 => {
                // Each line its own, so that which lines a trim keeps shows;
                // mostly the job logged last, so that trims happen.
                let line = format!("line {}", self.rng.below(1_000_000));
                let job = match &self.logged {
                    Some(last) if self.rng.chance(2, 3) => last.clone(),
                    _ => job,
                };
                self.logged = Some(job.clone());
                if self.rng.chance(1, 2) {
                    Op::new("log", &[&job, &line])
                } else {
                    let keep = self.rng.range(1, 3).to_string();
                    Op::new("log", &[&job, &line, "KEEP", &keep])
                }
            }
            3 if self.rng.chance(1, 2) => Op::new("remove", &[&job]),
            3 => match self.rng.below(5) {
                0 => Op::new(
                    "counts",
                    &["pending", "dead", "active", "METRICS", "completed", "failed"],
                ),
                1 => Op::new("state", &[&job]),
                2 => Op::new("depths", &[LANES[0], LANES[1], "none"]),
                3 => Op::new("maxed", &[]),
                _ => Op::new("ratettl", &["0"]),
            },
            6 if self.rng.chance(1, 3) => {
                // EchoMQ's queue-wide ceiling and rate limiter, as its host
                // sets them (a fixture): what MAXED and RATETTL read.
                // A ceiling near the leases there are, so that MAXED's edge
                // (exactly as many leased) shows.
                let leased = v.sets["active"].len() as u64;
                let cap = (leased + self.rng.below(3)).saturating_sub(1).to_string();
                let count = self.rng.range(0, 4).to_string();
                let max = self.rng.range(0, 4).to_string();
                Op::new("flat-limits", &[&cap, &count, &max])
            }
            4 | 5 => {
                let dead = pick(&mut self.rng, v.sets["dead"].keys().collect());
                Op::new("reprocess", &[&dead])
            }
            _ if self.rare && self.rng.chance(1, 3) => {
                if self.rng.chance(1, 2) {
                    Op::new("qdrain", &[])
                } else {
                    Op::new("qdrain", &["SCHEDULE"])
                }
            }
            _ => return None,
        })
    }
}
