//! Property test of the whole lifecycle: random streams of every command run
//! on two prefixes, one through the native commands and one through the Lua
//! twins (each pair in one MULTI/EXEC, so both read the same clock). After
//! every operation the replies and the whole keyspaces must agree exactly,
//! and the invariants must hold:
//! - the ring holds exactly the serviceable lanes, each once;
//! - `gactive[lane]` equals the number of `P jlease` records naming the lane
//!   (no field at 0 or below);
//! - `P leases` and `P jlease` hold the same jobs;
//! - every job enqueued and not acked is in exactly one place (one pending
//!   zset or the leases), and nothing else is anywhere;
//! - no key is empty.
//!
//! The test also predicts ENQUEUE's and ACK's counts from the state before
//! the call. A failure prints the seed and step to replay.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::invariants::{check_invariants, View};
use common::rng::Rng;
use common::*;

const OPS_PER_SEED: usize = 1_300;
const SEEDS_PER_TEST: u64 = 10;
const SHORT_LEASE: &str = "1";
const LONG_LEASE: &str = "600000";

struct Run<'a> {
    c: &'a mut redis::Connection,
    twins: &'a Twins,
    rng: Rng,
    seed: u64,
    step: usize,
    n: String,
    l: String,
    lanes: Vec<String>,
    /// Jobs enqueued and not acked.
    alive: BTreeSet<String>,
    /// Jobs acked (may be enqueued again).
    completed: Vec<String>,
    /// Claims seen: (native token, twin token, jobs). The tokens are equal
    /// where the server shares its clock (see `Server::clock_tolerance`).
    handles: Vec<(i64, i64, Vec<String>)>,
    tol: i64,
    fresh: usize,
    /// The native keyspace after the last operation.
    state: BTreeMap<Vec<u8>, Content>,
}

impl Run<'_> {
    fn ctx(&self, what: &str) -> String {
        format!("seed {} step {}: {what}", self.seed, self.step)
    }

    fn pick<'v, T>(&mut self, v: &'v [T]) -> &'v T {
        &v[self.rng.below(v.len() as u64) as usize]
    }

    /// A short lease (it expires before the next REAP) or a long one. Where
    /// the native command and the twin read two clocks (Redis 7.0), their
    /// deadlines differ and expiry order could too: there leases never
    /// expire, and REAP finds nothing to do.
    fn lease(&mut self) -> &'static str {
        if self.tol == 0 && self.rng.chance(1, 2) {
            SHORT_LEASE
        } else {
            LONG_LEASE
        }
    }

    /// A token a correct worker drops (after NACK, or once EXTEND gave a new
    /// one). With one clock the test keeps it, to try it as a stale token;
    /// with two clocks (Redis 7.0) a stale token may coincide with a new
    /// deadline on one side only, so it is dropped as the SPEC tells workers.
    fn spent(&mut self, handle: usize) {
        if self.tol > 0 {
            self.handles.remove(handle);
        }
    }

    fn lane(&mut self) -> String {
        let lanes = self.lanes.clone();
        self.pick(&lanes).clone()
    }

    /// Runs `EMQ.<name>` natively and as a twin; replies must be equal.
    fn exec(&mut self, name: &str, args: &[String]) -> Reply {
        self.exec2(name, args, args).0
    }

    /// `exec` with different arguments for the twin (its own tokens).
    fn exec2(&mut self, name: &str, native: &[String], lua: &[String]) -> (Reply, Reply) {
        let with = |p: &str, args: &[String]| -> Vec<Vec<u8>> {
            std::iter::once(p.as_bytes().to_vec())
                .chain(args.iter().map(|a| a.as_bytes().to_vec()))
                .collect()
        };
        let (na, la) = (with(&self.n, native), with(&self.l, lua));
        let (mut rn, mut rl) = paired(self.c, self.twins, name, &refs(&na), &refs(&la));
        if self.tol > 0 && name == "dead" {
            // Two clocks (Redis 7.0): deaths in the same step may be stamped
            // a millisecond apart on one side only, which reorders the
            // (time, id) listing; the set and its times must still agree.
            by_id(&mut rn);
            by_id(&mut rl);
        }
        let what = self.ctx(&format!("{name} {native:?}"));
        assert!(same_reply(&rn, &rl, self.tol), "{what}: {rn:?} vs {rl:?}");
        if let Some(e) = rn.err() {
            panic!("{what}: unexpected error {e}");
        }
        (rn, rl)
    }

    fn step(&mut self) -> String {
        let before = View::of(&self.state);
        let roll = self.rng.below(100);
        let desc;
        if roll < 22 {
            // ENQUEUE: fresh ids, dead ids, and collisions with live ones.
            let lane = self.lane();
            let mut args = vec![lane.clone()];
            let mut expect_added = BTreeSet::new();
            for _ in 0..self.rng.range(1, 3) {
                let job = match self.rng.below(10) {
                    0..=4 => {
                        self.fresh += 1;
                        format!("{lane}#{}", self.fresh)
                    }
                    5 | 6 if !self.completed.is_empty() => {
                        let completed = self.completed.clone();
                        self.pick(&completed).clone()
                    }
                    7 => match before.pending.get(&lane).filter(|v| !v.is_empty()) {
                        Some(v) => v[self.rng.below(v.len() as u64) as usize].0.clone(),
                        None => continue,
                    },
                    _ => match before
                        .leases
                        .keys()
                        .nth(self.rng.below(before.leases.len().max(1) as u64) as usize)
                    {
                        Some(j) => j.clone(),
                        None => continue,
                    },
                };
                if !self.alive.contains(&job) {
                    expect_added.insert(job.clone());
                }
                let mint = match self.rng.below(6) {
                    0 => format!("{}.25", self.rng.range(0, 20)),
                    _ => self.rng.range(0, 30).to_string(),
                };
                args.extend([mint, job]);
            }
            if args.len() == 1 {
                return "skip".into();
            }
            let added = self.exec("enqueue", &args);
            assert_eq!(
                added,
                Reply::Ok(Value::Int(expect_added.len() as i64)),
                "{}",
                self.ctx("enqueue count")
            );
            for job in expect_added {
                self.completed.retain(|d| d != &job);
                self.alive.insert(job);
            }
            desc = format!("enqueue {args:?}");
        } else if roll < 45 {
            let name = if roll < 33 { "wclaim" } else { "claim" };
            let lease = [self.lease().to_string()];
            let (rn, rl) = self.exec2(name, &lease, &lease);
            if let (Some((_, tn, jobs)), Some((_, tl, _))) = (rn.claim(), rl.claim()) {
                self.handles.push((tn, tl, jobs));
            }
            desc = format!("{name} {lease:?}");
        } else if roll < 62 && !self.handles.is_empty() {
            // ACK, NACK or EXTEND with a remembered token: current, stale or wrong.
            let recent = self.handles.len().saturating_sub(8);
            let picked = recent + self.rng.below((self.handles.len() - recent) as u64) as usize;
            let (mut tn, mut tl, mut jobs) = self.handles[picked].clone();
            if self.rng.chance(1, 10) {
                tn += 1_000_000_007;
                tl += 1_000_000_007;
            }
            if self.rng.chance(1, 4) {
                jobs.truncate(1);
            }
            if self.rng.chance(1, 8) {
                jobs.push("never-enqueued".into());
            }
            let with = |t: i64, extra: &[&str]| -> Vec<String> {
                std::iter::once(t.to_string())
                    .chain(extra.iter().map(|e| e.to_string()))
                    .chain(jobs.iter().cloned())
                    .collect()
            };
            let which = self.rng.below(10);
            if which < 5 {
                let expect: BTreeSet<&String> = jobs
                    .iter()
                    .filter(|j| before.leases.get(*j) == Some(&(tn as f64)) && before.jlease.contains_key(*j))
                    .collect();
                let (acked, _) = self.exec2("ack", &with(tn, &[]), &with(tl, &[]));
                assert_eq!(
                    acked,
                    Reply::Ok(Value::Int(expect.len() as i64)),
                    "{}",
                    self.ctx("ack count")
                );
                for job in expect {
                    self.alive.remove(job);
                    self.completed.push(job.clone());
                }
                desc = format!("ack {:?}", with(tn, &[]));
            } else if which < 8 {
                self.exec2("nack", &with(tn, &[]), &with(tl, &[]));
                self.spent(picked);
                desc = format!("nack {:?}", with(tn, &[]));
            } else {
                let lease = self.lease();
                let (rn, rl) = self.exec2("extend", &with(tn, &[lease]), &with(tl, &[lease]));
                let pair = |r: &Reply| match r.value() {
                    Value::Array(v) => match (&v[0], &v[1]) {
                        (Value::Int(d), Value::Int(n)) => (*d, *n),
                        _ => panic!("{r:?}"),
                    },
                    _ => panic!("{r:?}"),
                };
                let ((dn, n), (dl, _)) = (pair(&rn), pair(&rl));
                if n > 0 {
                    self.handles.push((dn, dl, jobs.clone()));
                    self.spent(picked);
                }
                desc = format!("extend {:?}", with(tn, &[lease]));
            }
        } else if roll < 70 {
            // Let the short leases run out first.
            std::thread::sleep(std::time::Duration::from_millis(2));
            let args = if self.rng.chance(1, 2) {
                vec!["COUNT".to_string(), self.rng.range(1, 4).to_string()]
            } else {
                vec![]
            };
            self.exec("reap", &args);
            desc = format!("reap {args:?}");
        } else if roll < 76 {
            let lane = self.lane();
            let n = if self.rng.chance(1, 4) {
                "NONE".to_string()
            } else {
                self.rng.range(1, 4).to_string()
            };
            self.exec("limit", &[lane.clone(), n.clone()]);
            desc = format!("limit {lane} {n}");
        } else if roll < 84 {
            let lane = self.lane();
            let name = if self.rng.chance(1, 2) { "pause" } else { "resume" };
            self.exec(name, std::slice::from_ref(&lane));
            desc = format!("{name} {lane}");
        } else if roll < 92 {
            let to = self.lane();
            let (job, from) = match before.pending.iter().find(|(_, v)| !v.is_empty()) {
                Some((lane, v)) if self.rng.chance(4, 5) => {
                    (v[self.rng.below(v.len() as u64) as usize].0.clone(), lane.clone())
                }
                _ => ("absent".to_string(), self.lane()),
            };
            self.exec("reassign", &[job.clone(), from.clone(), to.clone()]);
            desc = format!("reassign {job} {from} {to}");
        } else if roll < 94 {
            let lane = self.lane();
            let w = self.rng.range(1, 5).to_string();
            self.exec("weight", &[lane.clone(), w.clone()]);
            desc = format!("weight {lane} {w}");
        } else if roll < 95 {
            let n = if self.rng.chance(1, 3) {
                "NONE".to_string()
            } else {
                self.rng.range(1, 4).to_string()
            };
            self.exec("policy", &["max-deliveries".to_string(), n.clone()]);
            desc = format!("policy max-deliveries {n}");
        } else if roll < 97 {
            // REVIVE some of the dead, and an id that is not dead.
            let mut jobs: Vec<String> = before
                .dead
                .keys()
                .filter(|_| self.rng.chance(1, 2))
                .cloned()
                .collect();
            jobs.push("not-dead".into());
            let expect = jobs.len() as i64 - 1;
            let revived = self.exec("revive", &jobs);
            assert_eq!(
                revived,
                Reply::Ok(Value::Int(expect)),
                "{}",
                self.ctx("revive count")
            );
            desc = format!("revive {jobs:?}");
        } else if roll < 98 {
            self.exec("dead", &[]);
            desc = "dead".into();
        } else {
            let lane = self.lane();
            self.exec("lane", std::slice::from_ref(&lane));
            desc = format!("lane {lane}");
        }
        desc
    }

    fn check(&mut self, desc: &str) {
        let native = snapshot(self.c, &self.n);
        let lua = snapshot(self.c, &self.l);
        if let Some(d) = diff(&native, &lua, self.tol as f64) {
            panic!("{}: keyspaces diverge: {d}", self.ctx(desc));
        }
        if let Err(broken) = check_invariants(&native, &self.alive, &BTreeSet::new()) {
            panic!("{}: {broken}", self.ctx(desc));
        }
        self.state = native;
    }
}

/// One seed's stream; returns how many operations of each command ran.
fn run_seed(c: &mut redis::Connection, twins: &Twins, tol: i64, seed: u64) -> BTreeMap<String, usize> {
    let mut rng = Rng::new(seed);
    let lanes: Vec<String> = (0..rng.range(2, 6)).map(|i| format!("L{i}")).collect();
    let mut run = Run {
        c,
        twins,
        rng,
        seed,
        step: 0,
        n: format!("pn{seed}{{q}}:"),
        l: format!("pl{seed}{{q}}:"),
        lanes,
        alive: BTreeSet::new(),
        completed: Vec::new(),
        handles: Vec::new(),
        tol,
        fresh: 0,
        state: BTreeMap::new(),
    };
    let counters = ["emq_jobs_died", "emq_jobs_revived", "emq_jobs_reaped_by_claims"];
    let read = |c: &mut redis::Connection| -> Vec<usize> {
        counters
            .iter()
            .map(|f| info_text(c, "emq", f).and_then(|v| v.parse().ok()).unwrap_or(0))
            .collect()
    };
    let at_start = read(run.c);
    let mut ran = BTreeMap::new();
    while run.step < OPS_PER_SEED {
        run.step += 1;
        let desc = run.step();
        if desc != "skip" {
            run.check(&desc);
            let name = desc.split(' ').next().unwrap_or_default().to_string();
            *ran.entry(name).or_default() += 1;
        }
    }
    // What the native commands did on their own (deaths, revivals, returns
    // before a claim's turn), counted as if they were commands; with two
    // clocks (Redis 7.0) no lease expires, and no claim returns one.
    for ((name, end), start) in counters.iter().zip(read(run.c)).zip(at_start) {
        let expires = tol == 0 || *name != "emq_jobs_reaped_by_claims";
        ran.insert(name.to_string(), if expires { end - start } else { 1_000 });
    }
    ran
}

/// Every command the stream drives, each of which must have run often
/// (the rare ones at least 25 times).
const COMMANDS: [(&str, usize); 19] = [
    ("enqueue", 100),
    ("claim", 100),
    ("wclaim", 100),
    ("ack", 100),
    ("nack", 100),
    ("extend", 100),
    ("reap", 100),
    ("limit", 100),
    ("pause", 100),
    ("resume", 100),
    ("reassign", 100),
    ("weight", 100),
    ("lane", 25),
    ("policy", 25),
    ("revive", 25),
    ("dead", 25),
    ("emq_jobs_died", 25),
    ("emq_jobs_revived", 10),
    ("emq_jobs_reaped_by_claims", 100),
];

/// The streams of `SEEDS_PER_TEST` seeds from `first` on one server (four
/// tests run in parallel): every operation agreed with the twin and kept the
/// invariants (checked as they ran); here, that they covered every command.
fn streams_from(first: u64) {
    let mut ran = BTreeMap::<String, usize>::new();
    for counts in over_seeds(first..first + SEEDS_PER_TEST, run_seed) {
        for (name, n) in counts {
            *ran.entry(name).or_default() += n;
        }
    }
    let ops: usize = ran
        .iter()
        .filter(|(k, _)| !k.starts_with("emq_"))
        .map(|(_, n)| n)
        .sum();
    assert!(ops >= 12_500, "{ops} operations");
    for (name, least) in COMMANDS {
        let n = ran.get(name).copied().unwrap_or(0);
        assert!(n >= least, "{name} ran {n} times: {ran:?}");
    }
}

#[test]
fn lifecycle_streams_agree_and_keep_the_invariants_a() {
    streams_from(0);
}

#[test]
fn lifecycle_streams_agree_and_keep_the_invariants_b() {
    streams_from(100);
}

#[test]
fn lifecycle_streams_agree_and_keep_the_invariants_c() {
    streams_from(200);
}

#[test]
fn lifecycle_streams_agree_and_keep_the_invariants_d() {
    streams_from(300);
}

/// A DEAD listing ordered by job id instead of by time of death.
fn by_id(reply: &mut Reply) {
    if let Reply::Ok(Value::Array(entries)) = reply {
        entries.sort_by_key(|entry| match entry {
            Value::Array(fields) => fields.first().map(|id| format!("{id:?}")),
            _ => None,
        });
    }
}
