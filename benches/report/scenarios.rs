//! The scenarios: each builds the same state under a native and a Lua
//! prefix and drives both alternately (native block, Lua block, …) so that
//! drift in the machine's speed hits both alike. A scenario with a core
//! floor also drives the core commands that do the same writes.

use std::time::{Duration, Instant};

use super::common::{self, Server, Twins, Value};
use super::drive::*;
use super::output::{Row, Waiting};

/// Native/Lua block pairs per scenario.
pub const ROUNDS: usize = 8;
/// Claim calls per flavour in a one-job-per-turn scenario: blocks long
/// enough (tens of ms of server time each) that scheduling noise averages out.
pub const CALLS: usize = 48_000;
/// Pending jobs per lane that CALLS one-job turns over 100 lanes never exhaust.
const DEPTH_K1: usize = CALLS / 100 + 1;

pub struct Bench {
    pub server: Server,
    pub c: redis::Connection,
    pub twins: Twins,
}

/// `lanes` lanes, each with `depth` jobs and weight `weight`, all ringed;
/// optionally each at a ceiling of `limit`.
fn lanes(
    c: &mut redis::Connection,
    p: &str,
    lanes: usize,
    depth: usize,
    weight: usize,
    limit: Option<usize>,
) {
    let mut cmds = Vec::new();
    let mut serial = 0usize;
    for i in 0..lanes {
        let lane = format!("l{i}");
        let mut enqueue = args(&["EMQ.ENQUEUE", p, &lane]);
        for _ in 0..depth {
            serial += 1;
            enqueue.push(serial.to_string().into_bytes());
            enqueue.push(format!("j{serial}").into_bytes());
        }
        cmds.push(enqueue);
        if weight != 1 {
            cmds.push(args(&["EMQ.WEIGHT", p, &lane, &weight.to_string()]));
        }
        if let Some(l) = limit {
            cmds.push(args(&["EMQ.LIMIT", p, &lane, &l.to_string()]));
        }
    }
    send(c, &cmds);
}

/// The twin or the native command of `name`, on prefix `p`.
fn command(twins: &Twins, native: bool, name: &str, p: &str, rest: &[&str]) -> Cmd {
    let mut a: Vec<&[u8]> = vec![p.as_bytes()];
    a.extend(rest.iter().map(|s| s.as_bytes()));
    if native {
        common::native_command(name, &a)
    } else {
        twins.command(name, &a)
    }
}

/// `(token, jobs)` of a claim reply.
fn turn(reply: &Value) -> Option<(i64, Vec<String>)> {
    match reply {
        Value::Array(v) if v.len() > 2 => {
            let Value::Int(token) = v[1] else { return None };
            Some((token, v[2..].iter().map(common::text).collect()))
        }
        _ => None,
    }
}

impl Bench {
    /// One claim scenario: `setup` builds the same state under both
    /// prefixes; each block runs `calls / ROUNDS` claims.
    pub fn claims(
        &mut self,
        name: &str,
        weighted: bool,
        calls: usize,
        setup: &dyn Fn(&mut redis::Connection, &str),
    ) -> Row {
        flush(&mut self.c);
        let (n, l) = ("bn{q}:", "bl{q}:");
        setup(&mut self.c, n);
        setup(&mut self.c, l);
        let verb = if weighted { "wclaim" } else { "claim" };
        let native_cmd = command(&self.twins, true, verb, n, &["600000"]);
        let lua_cmd = command(&self.twins, false, verb, l, &["600000"]);
        let (mut native, mut lua) = (Tally::default(), Tally::default());
        for _ in 0..ROUNDS {
            for (tally, cmd, stat) in [
                (&mut native, &native_cmd, format!("emq.{verb}")),
                (&mut lua, &lua_cmd, "evalsha".to_string()),
            ] {
                if native_only() && stat == "evalsha" {
                    continue;
                }
                reset_stats(&mut self.c);
                let batch = vec![cmd.clone(); calls / ROUNDS];
                let (replies, elapsed) = send(&mut self.c, &batch);
                tally.add(&commandstats(&mut self.c), &[&stat], served(&replies), elapsed);
            }
        }
        let memory = Some((
            memory(&mut self.c, &format!("{n}*")),
            memory(&mut self.c, &format!("{l}*")),
        ));
        Row {
            name: name.to_string(),
            native,
            lua,
            floor_usec_per_job: None,
            memory_bytes: memory,
        }
    }

    /// The claim scenarios of one replication mode (`suffix` names it).
    pub fn claim_scenarios(&mut self, rows: &mut Vec<Row>, suffix: &str) {
        for k in [1usize, 8, 64] {
            let name = format!("WCLAIM K={k}, 100 lanes{suffix}");
            if !selected(&name) {
                continue;
            }
            let calls = if k == 64 { 4_000 } else { CALLS };
            let depth = calls * k / 100 + k;
            let mut row = self.claims(&name, true, calls, &|c, p| lanes(c, p, 100, depth, k, None));
            if floors() {
                row.floor_usec_per_job = Some(self.claim_floor(k, calls / ROUNDS, depth) / k as f64);
            }
            rows.push(row);
        }
        let name = format!("WCLAIM K=1, 100 lanes, AOF on{suffix}");
        if selected(&name) {
            // The replication stream is built and written.
            set_config(&mut self.c, "appendonly", "yes");
            std::thread::sleep(Duration::from_millis(500));
            rows.push(self.claims(&name, true, CALLS, &|c, p| lanes(c, p, 100, DEPTH_K1, 1, None)));
            set_config(&mut self.c, "appendonly", "no");
        }
        let name = format!("CLAIM, 100 lanes{suffix}");
        if selected(&name) {
            rows.push(self.claims(&name, false, CALLS, &|c, p| lanes(c, p, 100, DEPTH_K1, 1, None)));
        }
        // As users hit a ceiling: every lane at ceiling 1 with two jobs, and
        // as many claims as lanes, so that the ring drains from 20,000 lanes
        // to none (every turn removes its lane).
        let name = format!("WCLAIM, 20,000 lanes at ceiling 1 draining to none{suffix}");
        if selected(&name) {
            rows.push(self.claims(&name, true, 20_000, &|c, p| lanes(c, p, 20_000, 2, 1, Some(1))));
        }
        let name = format!("cycle ENQUEUE→WCLAIM→ACK{suffix}");
        if selected(&name) {
            rows.push(self.cycle(&name, CALLS, 1));
        }
        let name = format!("batched cycle ENQUEUE×8→WCLAIM K=8→ACK×8{suffix}");
        if selected(&name) {
            let mut row = self.cycle(&name, CALLS, 8);
            if floors() {
                row.floor_usec_per_job = Some(self.cycle_floor(CALLS, 8));
            }
            rows.push(row);
        }
    }

    /// Many lanes (flat cost, the O(1) removal) and REAP.
    pub fn lane_count_scenarios(&mut self, rows: &mut Vec<Row>) {
        let name = "WCLAIM, 20,000 lanes at ceiling 1";
        if selected(name) {
            rows.push(self.claims(name, true, 8_000, &|c, p| lanes(c, p, 20_000, 2, 1, Some(1))));
        }
        let name = "WCLAIM K=1, 100,000 lanes";
        if selected(name) {
            rows.push(self.claims(name, true, CALLS, &|c, p| lanes(c, p, 100_000, 2, 1, None)));
        }
        if selected("REAP") {
            rows.push(self.reap(10_000));
        }
    }

    /// K=1 turns with a replica attached (with the module, so that both
    /// modes apply): the replication stream is built and sent. The replica
    /// must end with the primary's keyspace.
    pub fn with_replica(&mut self, name: &str) -> Row {
        let replica = Server::start();
        let mut r = common::replicate_into(&replica, &self.server);
        let row = self.claims(name, true, CALLS, &|c, p| lanes(c, p, 100, DEPTH_K1, 1, None));
        common::in_sync(&mut self.c, &mut r);
        assert_eq!(
            common::digest(&mut self.c),
            common::digest(&mut r),
            "{name}: the replica diverged"
        );
        let _: () = redis::cmd("REPLICAOF")
            .arg("NO")
            .arg("ONE")
            .query(&mut r)
            .unwrap();
        row
    }

    /// ENQUEUE → WCLAIM → ACK over 100 lanes, `batch` jobs at a time: each
    /// ENQUEUE adds `batch` jobs to a lane of weight `batch`, each claim
    /// leases `batch`, each ACK completes them under one token.
    fn cycle(&mut self, name: &str, jobs: usize, batch: usize) -> Row {
        flush(&mut self.c);
        let (mut native, mut lua) = (Tally::default(), Tally::default());
        let mut serial = 0;
        for (p, is_native) in [("cn{q}:", true), ("cl{q}:", false)] {
            if batch > 1 {
                let weights: Vec<Cmd> = (0..100)
                    .map(|i| {
                        command(
                            &self.twins,
                            is_native,
                            "weight",
                            p,
                            &[&format!("lane{i}"), &batch.to_string()],
                        )
                    })
                    .collect();
                send(&mut self.c, &weights);
            }
        }
        for _ in 0..ROUNDS {
            for (is_native, tally) in [(true, &mut native), (false, &mut lua)] {
                if native_only() && !is_native {
                    continue;
                }
                let p = if is_native { "cn{q}:" } else { "cl{q}:" };
                let build = |name: &str, rest: &[&str]| command(&self.twins, is_native, name, p, rest);
                reset_stats(&mut self.c);
                let turns = jobs / ROUNDS / batch;
                let enqueues: Vec<Cmd> = (0..turns)
                    .map(|i| {
                        let lane = format!("lane{}", i % 100);
                        let mut rest = vec![lane];
                        for _ in 0..batch {
                            serial += 1;
                            rest.extend([serial.to_string(), format!("job{serial}")]);
                        }
                        let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
                        build("enqueue", &rest)
                    })
                    .collect();
                let claims: Vec<Cmd> = (0..turns).map(|_| build("wclaim", &["600000"])).collect();
                let (_, t1) = send(&mut self.c, &enqueues);
                let (replies, t2) = send(&mut self.c, &claims);
                let acks: Vec<Cmd> = replies
                    .iter()
                    .filter_map(turn)
                    .map(|(token, jobs)| {
                        let mut rest = vec![token.to_string()];
                        rest.extend(jobs);
                        let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
                        build("ack", &rest)
                    })
                    .collect();
                let (_, t3) = send(&mut self.c, &acks);
                let names: &[&str] = if is_native {
                    &["emq.enqueue", "emq.wclaim", "emq.ack"]
                } else {
                    &["evalsha"]
                };
                tally.add(&commandstats(&mut self.c), names, served(&replies), t1 + t2 + t3);
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

    /// REAP COUNT 100 of `leases` expired leases, in each block.
    fn reap(&mut self, leases: usize) -> Row {
        let (mut native, mut lua) = (Tally::default(), Tally::default());
        for _ in 0..ROUNDS {
            for (is_native, tally) in [(true, &mut native), (false, &mut lua)] {
                if native_only() && !is_native {
                    continue;
                }
                let p = if is_native { "rn{q}:" } else { "rl{q}:" };
                // Expired leases, made natively for both (the state is the same).
                flush(&mut self.c);
                let mut enqueue = vec![b"EMQ.ENQUEUE".to_vec(), p.as_bytes().to_vec(), b"lane".to_vec()];
                for i in 0..leases {
                    enqueue.push(i.to_string().into_bytes());
                    enqueue.push(format!("j{i}").into_bytes());
                }
                set_config(&mut self.c, "emq.reap-on-claim", "0");
                send(
                    &mut self.c,
                    &[enqueue, args(&["EMQ.WEIGHT", p, "lane", "1000000"])],
                );
                // emq.max-claim (1000) caps each turn.
                send(
                    &mut self.c,
                    &vec![args(&["EMQ.WCLAIM", p, "1"]); leases.div_ceil(1000)],
                );
                set_config(&mut self.c, "emq.reap-on-claim", "16");
                std::thread::sleep(Duration::from_millis(5));
                let reap = command(&self.twins, is_native, "reap", p, &["COUNT", "100"]);
                reset_stats(&mut self.c);
                let (replies, elapsed) = send(&mut self.c, &vec![reap; leases / 100]);
                let reaped: u64 = replies
                    .iter()
                    .map(|r| {
                        if let Value::Array(v) = r {
                            v.len() as u64
                        } else {
                            0
                        }
                    })
                    .sum();
                let stat = if is_native { "emq.reap" } else { "evalsha" };
                tally.add(&commandstats(&mut self.c), &[stat], reaped, elapsed);
            }
        }
        Row {
            name: format!("REAP of {leases} expired leases (COUNT 100)"),
            native,
            lua,
            floor_usec_per_job: None,
            memory_bytes: None,
        }
    }

    /// The core floor of a `WCLAIM K=k, 100 lanes` turn: the summed
    /// usec_per_call of the core commands that do the same writes on the same
    /// state (LMOVE, ZPOPMIN k, ZADD of k leases, HSET of k records, HINCRBY),
    /// driven in the ring's own order. µs per turn.
    fn claim_floor(&mut self, k: usize, calls: usize, depth: usize) -> f64 {
        flush(&mut self.c);
        let p = "f{q}:";
        lanes(&mut self.c, p, 100, depth, k, None);
        reset_stats(&mut self.c);
        let mut cmds = Vec::with_capacity(calls * 5);
        for t in 0..calls {
            let (lane, visit) = (t % 100, t / 100);
            let first = lane * depth + visit * k + 1;
            cmds.extend(floor_claim(p, &format!("l{lane}"), first..first + k));
        }
        send(&mut self.c, &cmds);
        per_call_sum(&mut self.c, &["lmove", "zpopmin", "zadd", "hset", "hincrby"])
    }

    /// The core floor of the batched cycle, µs per job: the core commands
    /// doing its writes — ZADD of `batch` pending jobs; the claim's LMOVE,
    /// ZPOPMIN, ZADD, HSET, HINCRBY; the ACK's ZREM, HDEL, HINCRBY — in the
    /// cycle's own phases (every ENQUEUE of a round, then every claim, then
    /// every ACK), so that they meet the keys at the sizes the cycle does: a
    /// lane's pending set holding several batches, `P jlease` thousands of
    /// records (a floor that drained each batch at once would write to
    /// keys of 8 entries). `jobs` in `ROUNDS` rounds, as the cycle runs them.
    fn cycle_floor(&mut self, jobs: usize, batch: usize) -> f64 {
        flush(&mut self.c);
        let p = "g{q}:";
        let ring = format!("{p}gring");
        let ringed: Vec<String> = (0..100).map(|i| format!("l{i}")).collect();
        let mut pushes = args(&["RPUSH", &ring]);
        pushes.extend(ringed.iter().map(|l| l.as_bytes().to_vec()));
        send(&mut self.c, &[pushes]);
        reset_stats(&mut self.c);
        let turns = jobs / ROUNDS / batch;
        let mut serial = 0;
        for _ in 0..ROUNDS {
            self.cycle_floor_round(p, turns, batch, &mut serial);
        }
        let stats = commandstats(&mut self.c);
        let usec: u64 = ["zadd", "lmove", "zpopmin", "hset", "hincrby", "zrem", "hdel"]
            .iter()
            .filter_map(|n| stats.get(*n).map(|(_, usec)| usec))
            .sum();
        usec as f64 / (ROUNDS * turns * batch) as f64
    }

    /// One round of the floor: `turns` batches, phase by phase.
    fn cycle_floor_round(&mut self, p: &str, turns: usize, batch: usize, serial: &mut usize) {
        let (mut enqueues, mut claims, mut acks) = (Vec::new(), Vec::new(), Vec::new());
        for t in 0..turns {
            let lane = format!("l{}", t % 100);
            let first = *serial + 1;
            *serial += batch;
            let last = *serial;
            let mut zadd = args(&["ZADD", &format!("{p}g:{lane}:pending")]);
            for s in first..=last {
                zadd.extend([s.to_string().into_bytes(), format!("j{s}").into_bytes()]);
            }
            enqueues.push(zadd);
            claims.extend(floor_claim(p, &lane, first..last + 1));
            let mut zrem = args(&["ZREM", &format!("{p}leases")]);
            let mut hdel = args(&["HDEL", &format!("{p}jlease")]);
            for s in first..=last {
                zrem.push(format!("j{s}").into_bytes());
                hdel.push(format!("j{s}").into_bytes());
            }
            acks.push(zrem);
            acks.push(hdel);
            acks.push(args(&[
                "HINCRBY",
                &format!("{p}gactive"),
                &lane,
                &format!("-{batch}"),
            ]));
        }
        for phase in [enqueues, claims, acks] {
            send(&mut self.c, &phase);
        }
    }

    /// Workers waiting for a steady arrival of jobs: blocking (`BLOCK`) or
    /// polling (a plain claim, then 1 ms of sleep when empty).
    pub fn waiting(&mut self, blocking: bool, jobs: usize, every: Duration, workers: usize) -> Waiting {
        let p = "w{q}:";
        let server = &self.server;
        let mut c = server.conn();
        flush(&mut c);
        reset_stats(&mut c);
        let cpu0 = server_cpu(&mut c);
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel::<f64>();
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let mut w = server.conn();
                let (stop, tx) = (stop.clone(), tx.clone());
                std::thread::spawn(move || {
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let mut claim = redis::cmd("EMQ.WCLAIM");
                        claim.arg(p).arg(60_000);
                        if blocking {
                            claim.arg("BLOCK").arg(100);
                        }
                        let reply: Value = claim.query(&mut w).unwrap();
                        let Some((token, jobs)) = turn(&reply) else {
                            if !blocking {
                                std::thread::sleep(Duration::from_millis(1));
                            }
                            continue;
                        };
                        let at = now_us();
                        for id in &jobs {
                            let sent: u128 = id.split(':').nth(1).and_then(|t| t.parse().ok()).unwrap_or(at);
                            let _ = tx.send(at.saturating_sub(sent) as f64 / 1000.0);
                        }
                        let _: i64 = redis::cmd("EMQ.ACK")
                            .arg(p)
                            .arg(token)
                            .arg(&jobs)
                            .query(&mut w)
                            .unwrap();
                    }
                })
            })
            .collect();
        let start = Instant::now();
        for i in 0..jobs {
            let due = start + every * i as u32;
            if let Some(wait) = due.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
            let id = format!("j{i}:{}", now_us());
            let _: i64 = redis::cmd("EMQ.ENQUEUE")
                .arg(p)
                .arg(format!("lane{}", i % 10))
                .arg(i)
                .arg(&id)
                .query(&mut c)
                .unwrap();
        }
        let mut latencies: Vec<f64> = (0..jobs)
            .map(|_| {
                rx.recv_timeout(Duration::from_secs(10))
                    .expect("every job picked up")
            })
            .collect();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        for h in handles {
            let _ = h.join();
        }
        let cpu = server_cpu(&mut c) - cpu0;
        let claims = commandstats(&mut c)
            .get("emq.wclaim")
            .map_or(0, |(calls, _)| *calls);
        latencies.sort_by(|a, b| a.total_cmp(b));
        let pct = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q) as usize];
        Waiting {
            mode: if blocking {
                "blocking (BLOCK)"
            } else {
                "polling every 1 ms"
            },
            jobs,
            server_cpu_s: cpu,
            claim_calls: claims,
            pickup_ms_p50: pct(0.5),
            pickup_ms_p99: pct(0.99),
        }
    }
}

/// A claim turn's writes as core commands: LMOVE, ZPOPMIN, ZADD of the
/// leases, HSET of the records, HINCRBY of the active count.
fn floor_claim(p: &str, lane: &str, serials: std::ops::Range<usize>) -> Vec<Cmd> {
    let ring = format!("{p}gring");
    let k = serials.len();
    let mut leases = args(&["ZADD", &format!("{p}leases")]);
    let mut records = args(&["HSET", &format!("{p}jlease")]);
    for serial in serials {
        leases.extend([b"1796000000000".to_vec(), format!("j{serial}").into_bytes()]);
        records.extend([
            format!("j{serial}").into_bytes(),
            format!("{serial} {lane}").into_bytes(),
        ]);
    }
    vec![
        args(&["LMOVE", &ring, &ring, "LEFT", "RIGHT"]),
        args(&["ZPOPMIN", &format!("{p}g:{lane}:pending"), &k.to_string()]),
        leases,
        records,
        args(&["HINCRBY", &format!("{p}gactive"), lane, &k.to_string()]),
    ]
}

/// The summed usec_per_call of `names` since the last reset.
fn per_call_sum(c: &mut redis::Connection, names: &[&str]) -> f64 {
    let stats = commandstats(c);
    names
        .iter()
        .map(|n| {
            stats
                .get(*n)
                .map_or(0.0, |(calls, usec)| *usec as f64 / (*calls).max(1) as f64)
        })
        .sum()
}

fn now_us() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros()
}

/// `EMQ_BENCH_ONLY=<part of a scenario name>` (or `=<the whole name>`) runs
/// the matching scenarios.
pub fn selected(name: &str) -> bool {
    std::env::var("EMQ_BENCH_ONLY").map_or(true, |only| match only.strip_prefix('=') {
        Some(exact) => name == exact,
        None => name.contains(&only),
    })
}

/// `EMQ_BENCH_NATIVE_ONLY=1` skips the Lua blocks and the floors (for
/// profiling the native command alone).
pub fn native_only() -> bool {
    std::env::var("EMQ_BENCH_NATIVE_ONLY").is_ok_and(|v| v == "1")
}

/// Whether the floors run: not when only the native blocks do, unless
/// `EMQ_BENCH_FLOORS=1` (for profiling the floor's core commands without
/// the twins', which run the same commands).
fn floors() -> bool {
    !native_only() || std::env::var("EMQ_BENCH_FLOORS").is_ok_and(|v| v == "1")
}
