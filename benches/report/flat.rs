//! The flat (lane-less) queue, native against its twins (SPEC section 9):
//! QENQUEUE of 8 jobs a call, QCLAIM, QBCLAIM of 32, and MEXTEND of 16
//! leases a call, each per job.

use super::claims::ROUNDS;
use super::drive::*;
use super::output::Row;
use super::Bench;

/// Jobs per side in each scenario.
const FLAT_JOBS: usize = 16_000;

impl Bench {
    pub fn flat_scenarios(&mut self, rows: &mut Vec<Row>, suffix: &str) {
        for (verb, batch, title) in [
            ("qenqueue", 8, "QENQUEUE of 8"),
            ("qclaim", 1, "QCLAIM"),
            ("qbclaim", 32, "QBCLAIM of 32"),
            ("mextend", 16, "MEXTEND of 16"),
        ] {
            let name = format!("flat queue: {title}{suffix}");
            if selected(&name) {
                rows.push(self.flat(&name, verb, batch));
            }
        }
    }

    /// `FLAT_JOBS / ROUNDS` jobs a block through `verb`, `batch` a call,
    /// from the same state on both sides (made natively before each block).
    fn flat(&mut self, name: &str, verb: &str, batch: usize) -> Row {
        let (mut native, mut lua) = (Tally::default(), Tally::default());
        let per_block = FLAT_JOBS / ROUNDS;
        for _ in 0..ROUNDS {
            for (side, tally, p) in [
                (Side::Native, &mut native, "fn{q}:"),
                (Side::Lua, &mut lua, "fl{q}:"),
            ] {
                if native_only() && side == Side::Lua {
                    continue;
                }
                flush(&mut self.c);
                let ids: Vec<String> = (0..per_block).map(|i| format!("JOB-{i:06}")).collect();
                let payload = "x".repeat(32);
                if verb != "qenqueue" {
                    let fill: Vec<Cmd> = ids
                        .chunks(500)
                        .map(|chunk| {
                            let mut c = args(&["EMQ.QENQUEUE", p]);
                            for id in chunk {
                                c.extend([id.clone().into_bytes(), payload.clone().into_bytes()]);
                            }
                            c
                        })
                        .collect();
                    send(&mut self.c, &fill);
                }
                if verb == "mextend" {
                    let claim = args(&["EMQ.QBCLAIM", p, "600000", "1000"]);
                    send(&mut self.c, &vec![claim; per_block.div_ceil(1000)]);
                }
                let calls: Vec<Cmd> = match verb {
                    "qenqueue" => ids
                        .chunks(batch)
                        .flat_map(|chunk| {
                            let rest: Vec<&str> = chunk
                                .iter()
                                .flat_map(|id| [id.as_str(), payload.as_str()])
                                .collect();
                            side.calls(&mut self.c, &self.twins, verb, p, &rest)
                        })
                        .collect(),
                    "qclaim" => {
                        let call = side
                            .calls(&mut self.c, &self.twins, verb, p, &["600000"])
                            .remove(0);
                        vec![call; per_block]
                    }
                    "qbclaim" => {
                        let n = batch.to_string();
                        let call = side
                            .calls(&mut self.c, &self.twins, verb, p, &["600000", &n])
                            .remove(0);
                        vec![call; per_block.div_ceil(batch)]
                    }
                    _ => ids
                        .chunks(batch)
                        .flat_map(|chunk| {
                            let mut rest = vec!["900000"];
                            rest.extend(chunk.iter().flat_map(|id| [id.as_str(), "1"]));
                            side.calls(&mut self.c, &self.twins, verb, p, &rest)
                        })
                        .collect(),
                };
                reset_stats(&mut self.c);
                let (replies, elapsed) = send(&mut self.c, &calls);
                let jobs = match verb {
                    "qclaim" | "qbclaim" => served(&replies),
                    "mextend" => {
                        let failed: usize = replies.iter().map(|r| r.items().len()).sum();
                        assert_eq!(failed, 0, "{name}: every lease extended");
                        per_block as u64
                    }
                    _ => replies.iter().map(|r| r.int() as u64).sum(),
                };
                assert_eq!(jobs, per_block as u64, "{name}: every job");
                tally.add(&commandstats(&mut self.c), &side.stats(&[verb]), jobs, elapsed);
            }
        }
        Row {
            name: name.into(),
            native,
            lua,
            floor_usec_per_job: None,
            memory_bytes: None,
        }
    }
}
