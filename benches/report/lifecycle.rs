//! A job's whole life, native against its twins: ENQUEUE → WCLAIM →
//! COMPLETE cycles, REAP of expired leases and PROMOTE of due jobs.

use std::time::Duration;

use super::claims::ROUNDS;
use super::drive::*;
use super::output::Row;
use super::Bench;

/// Jobs per side in a cycle scenario.
const CYCLE_JOBS: usize = 24_000;
/// Leases (or due jobs) a sweep scenario builds in each block.
const SWEEP_JOBS: usize = 10_000;

impl Bench {
    pub fn lifecycle_scenarios(&mut self, rows: &mut Vec<Row>, suffix: &str) {
        let name = format!("cycle ENQUEUE→WCLAIM→COMPLETE, K=1, 100 lanes{suffix}");
        if selected(&name) {
            rows.push(self.cycle(&name, 1));
        }
        let name = format!("batched cycle ENQUEUE×8→WCLAIM K=8→COMPLETE×8, 100 lanes{suffix}");
        if selected(&name) {
            rows.push(self.cycle(&name, 8));
        }
    }

    /// Sweeps, in `effects` mode only.
    pub fn sweep_scenarios(&mut self, rows: &mut Vec<Row>) {
        let name = format!("REAP of {SWEEP_JOBS} expired leases (COUNT 100)");
        if selected(&name) {
            rows.push(self.sweep(&name, "reap"));
        }
        let name = format!("PROMOTE of {SWEEP_JOBS} due jobs (COUNT 100)");
        if selected(&name) {
            rows.push(self.sweep(&name, "promote"));
        }
    }

    /// ENQUEUE → WCLAIM → COMPLETE over 100 lanes, `batch` jobs at a time:
    /// each ENQUEUE adds `batch` jobs to a lane of weight `batch`, each claim
    /// leases them, each job is completed with its attempts as the token.
    fn cycle(&mut self, name: &str, batch: usize) -> Row {
        flush(&mut self.c);
        let (n, l, f) = ("cn{q}:", "cl{q}:", "cf{q}:");
        if batch > 1 {
            for p in [n, l, f] {
                let weights: Vec<Cmd> = (0..100)
                    .map(|i| args(&["EMQ.WEIGHT", p, &format!("l{i}"), &batch.to_string()]))
                    .collect();
                send(&mut self.c, &weights);
            }
        }
        let (mut native, mut lua, mut floor) = (Tally::default(), Tally::default(), Tally::default());
        let mut serial = 0usize;
        for _ in 0..ROUNDS {
            for (side, tally, p) in [
                (Side::Native, &mut native, n),
                (Side::Lua, &mut lua, l),
                (Side::Floor, &mut floor, f),
            ] {
                if native_only() && side == Side::Lua || side == Side::Floor && !c_floor(name) {
                    continue;
                }
                let turns = CYCLE_JOBS / ROUNDS / batch;
                let mut enqueues = Vec::new();
                for t in 0..turns {
                    let mut rest = vec![format!("l{}", t % 100)];
                    for _ in 0..batch {
                        serial += 1;
                        rest.extend([format!("JOB-{serial}"), format!("{serial:032}")]);
                    }
                    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
                    enqueues.extend(side.calls(&mut self.c, &self.twins, "enqueue", p, &rest));
                }
                let claim = side
                    .calls(&mut self.c, &self.twins, "wclaim", p, &["600000"])
                    .remove(0);
                reset_stats(&mut self.c);
                let at = (name, side.what("enqueue"));
                let per = batch as u64;
                let (_, t1) = self
                    .probe
                    .send(&mut self.c, (at.0, &at.1), side.procs(), &enqueues, |r| {
                        Some(r.len() as u64 * per)
                    });
                let at = side.what("wclaim");
                let (replies, t2) =
                    self.probe
                        .send(&mut self.c, (name, &at), side.procs(), &vec![claim; turns], |r| {
                            Some(served(r))
                        });
                let mut completes = Vec::new();
                for (id, attempts) in replies.iter().flat_map(jobs) {
                    completes.extend(side.calls(&mut self.c, &self.twins, "complete", p, &[&id, &attempts]));
                }
                let at = side.what("complete");
                let (done, t3) = self
                    .probe
                    .send(&mut self.c, (name, &at), side.procs(), &completes, |_| None);
                assert!(
                    done.iter().all(|d| d.int() == 1),
                    "{name}: every job completed ({})",
                    side.what("")
                );
                let stats = commandstats(&mut self.c);
                tally.add(
                    &stats,
                    &side.stats(&["enqueue", "wclaim", "complete"]),
                    served(&replies),
                    t1 + t2 + t3,
                );
            }
        }
        if c_floor(name) {
            assert_eq!(
                floor.jobs, native.jobs,
                "{name}: the C floor serves what the native does"
            );
        }
        Row {
            name: name.into(),
            native,
            lua,
            floor_usec_per_job: None,
            memory_bytes: None,
        }
    }

    /// `verb` COUNT 100 over `SWEEP_JOBS` expired leases (`reap`) or due
    /// scheduled jobs (`promote`), rebuilt natively before each block (the
    /// state is the same for both sides). No client waits, so the module's
    /// timer is idle and leaves the due jobs to the command.
    fn sweep(&mut self, name: &str, verb: &str) -> Row {
        let (mut native, mut lua) = (Tally::default(), Tally::default());
        set_config(&mut self.c, "emq.reap-on-claim", "0");
        for _ in 0..ROUNDS {
            for (side, tally, p) in [
                (Side::Native, &mut native, "rn{q}:"),
                (Side::Lua, &mut lua, "rl{q}:"),
            ] {
                if native_only() && side == Side::Lua {
                    continue;
                }
                flush(&mut self.c);
                self.leased(p, verb == "promote");
                std::thread::sleep(Duration::from_millis(5));
                let call = side
                    .calls(&mut self.c, &self.twins, verb, p, &["COUNT", "100"])
                    .remove(0);
                reset_stats(&mut self.c);
                let what = side.what(verb);
                let (replies, elapsed) = self.probe.send(
                    &mut self.c,
                    (name, &what),
                    side.procs(),
                    &vec![call; SWEEP_JOBS / 100],
                    |r| Some(r.iter().map(|r| r.int() as u64).sum()),
                );
                let swept: u64 = replies.iter().map(|r| r.int() as u64).sum();
                assert_eq!(swept, SWEEP_JOBS as u64, "{name}: every job swept");
                tally.add(&commandstats(&mut self.c), &side.stats(&[verb]), swept, elapsed);
            }
        }
        set_config(&mut self.c, "emq.reap-on-claim", "16");
        Row {
            name: name.into(),
            native,
            lua,
            floor_usec_per_job: None,
            memory_bytes: None,
        }
    }

    /// `SWEEP_JOBS` jobs in one lane, leased for 1 ms (emq.max-claim caps
    /// each turn); with `due`, each is then delayed to a time already past.
    fn leased(&mut self, p: &str, due: bool) {
        let mut cmds = vec![args(&["EMQ.WEIGHT", p, "lane", "1000000"])];
        for chunk in (0..SWEEP_JOBS).collect::<Vec<_>>().chunks(500) {
            let mut enqueue = args(&["EMQ.ENQUEUE", p, "lane"]);
            for i in chunk {
                enqueue.extend([format!("JOB-{i}").into_bytes(), format!("{i:032}").into_bytes()]);
            }
            cmds.push(enqueue);
        }
        send(&mut self.c, &cmds);
        let claims = vec![args(&["EMQ.WCLAIM", p, "1"]); SWEEP_JOBS.div_ceil(100)];
        let (replies, _) = send(&mut self.c, &claims);
        let leased: Vec<(String, String)> = replies.iter().flat_map(jobs).collect();
        assert_eq!(leased.len(), SWEEP_JOBS, "every job leased");
        if due {
            let delays: Vec<Cmd> = leased
                .iter()
                .map(|(id, attempts)| args(&["EMQ.DELAY", p, id, attempts, "AT", "1"]))
                .collect();
            send(&mut self.c, &delays);
        }
    }
}
