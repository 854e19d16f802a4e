//! What the per-lane figures of EMQ.STATS hold in memory (docs/commands.md,
//! "EMQ.STATS"): 10,000 lanes each served once, then each served in every
//! tenth of the window, every job completed; the bytes `INFO emq` reports a
//! lane. (The server's `used_memory` moves with the keyspace the run
//! changes, so it cannot tell the figures' part.)

use std::time::Duration;

use super::drive::{args, flush, selected, send, set_config, Cmd};
use super::support::info_field;
use super::Bench;

const LANES: usize = 10_000;
const P: &str = "mem{q}:";

/// Bytes a tracked lane holds: served within one tenth of the window, and
/// in every tenth.
pub struct FiguresMemory {
    pub one_tenth: u64,
    pub every_tenth: u64,
}

impl Bench {
    fn info_u64(&mut self, section: &str, field: &str) -> u64 {
        info_field(&mut self.c, section, field)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// Each lane's turn, its job completed (no lease left in flight).
    fn claim_and_complete(&mut self, claims: &[Cmd]) {
        let (replies, _) = send(&mut self.c, claims);
        let done: Vec<Cmd> = replies
            .iter()
            .map(|r| {
                let j = r.items();
                args(&["EMQ.COMPLETE", P, &j[0].text(), &j[2].int().to_string()])
            })
            .collect();
        send(&mut self.c, &done);
    }

    pub fn figures_memory(&mut self) -> Option<FiguresMemory> {
        if !selected("figures' memory") {
            return None;
        }
        flush(&mut self.c);
        // No figures but this run's.
        set_config(&mut self.c, "emq.stats-lanes", "0");
        set_config(&mut self.c, "emq.stats-lanes", "100000");
        let enqueue: Vec<Cmd> = (0..LANES)
            .map(|i| {
                let lane = format!("t{i}");
                let mut a = vec!["EMQ.ENQUEUE", P, &lane];
                let ids: Vec<String> = (0..12).map(|j| format!("JOB-{i}-{j}")).collect();
                for id in &ids {
                    a.push(id);
                    a.push("p");
                }
                args(&a)
            })
            .collect();
        send(&mut self.c, &enqueue);
        let claims: Vec<Cmd> = (0..LANES).map(|_| args(&["EMQ.CLAIM", P, "600000"])).collect();
        self.claim_and_complete(&claims);
        let one = self.info_u64("emq", "emq_stats_bytes");
        assert_eq!(self.info_u64("emq", "emq_stats_lanes"), LANES as u64);
        // A window of 2 s: ten slots of 200 ms, each lane served in every one.
        set_config(&mut self.c, "emq.stats-window", "2000");
        for _ in 0..10 {
            std::thread::sleep(Duration::from_millis(200));
            self.claim_and_complete(&claims);
        }
        let every = self.info_u64("emq", "emq_stats_bytes");
        set_config(&mut self.c, "emq.stats-window", "60000");
        flush(&mut self.c);
        Some(FiguresMemory {
            one_tenth: one / LANES as u64,
            every_tenth: every / LANES as u64,
        })
    }
}

/// The lines `make bench` prints.
pub fn print(m: &FiguresMemory) {
    println!("\nEMQ.STATS figures, {LANES} lanes tracked (INFO emq emq_stats_bytes a lane):");
    println!(
        "  a lane served within one tenth of the window: {} bytes",
        m.one_tenth
    );
    println!(
        "  a lane served in every tenth:                 {} bytes",
        m.every_tenth
    );
}
