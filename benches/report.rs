//! `make bench`: the native commands against their Lua twins on one server
//! that this bench starts, in one run. For each scenario both flavours get
//! the same starting state under two prefixes and are driven alternately
//! (native block, Lua block, native block, …) so that drift in the machine's
//! speed hits both alike. Figures come from the server's own
//! `INFO commandstats`. Output: a table on stdout, `bench/report.json` and
//! `bench/report.svg`.

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::{Duration, Instant};

use common::{Server, Twins, Value};

/// Commands per pipeline write, for the client-observed rate.
const DEPTH: usize = 64;
/// Native/Lua block pairs per scenario.
const ROUNDS: usize = 8;
/// Claim calls per flavour in a one-job-per-turn scenario: blocks long
/// enough (tens of ms of server time each) that scheduling noise averages out.
const CALLS: usize = 48_000;
/// Pending jobs per lane that CALLS one-job turns over 100 lanes never exhaust.
const DEPTH_K1: usize = CALLS / 100 + 1;

type Cmd = Vec<Vec<u8>>;

fn args(parts: &[&str]) -> Cmd {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}

/// Sends `cmds` pipelined, `DEPTH` at a time; returns the replies and the time.
fn send(c: &mut redis::Connection, cmds: &[Cmd]) -> (Vec<Value>, Duration) {
    let start = Instant::now();
    let mut replies = Vec::with_capacity(cmds.len());
    for chunk in cmds.chunks(DEPTH) {
        let mut pipe = redis::pipe();
        for cmd in chunk {
            let mut command = redis::cmd(std::str::from_utf8(&cmd[0]).unwrap());
            for a in &cmd[1..] {
                command.arg(a.as_slice());
            }
            pipe.add_command(command);
        }
        let got: Vec<Value> = pipe.query(c).expect("pipeline");
        replies.extend(got);
    }
    (replies, start.elapsed())
}

/// `INFO commandstats`: command → (calls, usec).
fn commandstats(c: &mut redis::Connection) -> BTreeMap<String, (u64, u64)> {
    let info: String = redis::cmd("INFO").arg("commandstats").query(c).unwrap();
    let mut out = BTreeMap::new();
    for line in info.lines() {
        let Some(rest) = line.strip_prefix("cmdstat_") else {
            continue;
        };
        let Some((name, fields)) = rest.split_once(':') else {
            continue;
        };
        let field = |f: &str| -> u64 {
            fields
                .split(',')
                .find_map(|kv| kv.strip_prefix(&format!("{f}=")))
                .and_then(|v| v.parse().ok())
                .unwrap_or(0)
        };
        out.insert(name.to_string(), (field("calls"), field("usec")));
    }
    out
}

fn reset_stats(c: &mut redis::Connection) {
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(c).unwrap();
}

/// Jobs served by claim replies (`[lane, deadline, job…]`).
fn served(replies: &[Value]) -> u64 {
    replies
        .iter()
        .map(|r| match r {
            Value::Array(v) if v.len() > 2 => (v.len() - 2) as u64,
            _ => 0,
        })
        .sum()
}

#[derive(Default, Clone, Copy)]
struct Tally {
    calls: u64,
    usec: u64,
    jobs: u64,
    elapsed: Duration,
}

impl Tally {
    fn add(&mut self, stats: &BTreeMap<String, (u64, u64)>, names: &[&str], jobs: u64, elapsed: Duration) {
        for n in names {
            if let Some((calls, usec)) = stats.get(*n) {
                self.calls += calls;
                self.usec += usec;
            }
        }
        self.jobs += jobs;
        self.elapsed += elapsed;
    }
    fn per_call(&self) -> f64 {
        self.usec as f64 / self.calls.max(1) as f64
    }
    fn per_job(&self) -> f64 {
        self.usec as f64 / self.jobs.max(1) as f64
    }
    fn calls_per_sec(&self) -> f64 {
        self.calls as f64 / self.elapsed.as_secs_f64().max(1e-9)
    }
}

struct Row {
    name: String,
    native: Tally,
    lua: Tally,
    floor: Option<f64>,
    /// Bytes (`MEMORY USAGE` summed) the native and the Lua keyspace hold
    /// after the same workload.
    memory: Option<(u64, u64)>,
}

struct Bench {
    server: Server,
    c: redis::Connection,
    twins: Twins,
}

impl Bench {
    /// One claim scenario: `setup` builds the same state under both
    /// prefixes; each block runs `calls` claims.
    fn claims(
        &mut self,
        name: &str,
        weighted: bool,
        calls: usize,
        setup: &dyn Fn(&mut redis::Connection, &str),
    ) -> Row {
        let _: () = redis::cmd("FLUSHALL").arg("SYNC").query(&mut self.c).unwrap();
        let (n, l) = ("bn{q}:", "bl{q}:");
        setup(&mut self.c, n);
        setup(&mut self.c, l);
        let verb = if weighted { "wclaim" } else { "claim" };
        let native_cmd = args(&[&format!("EMQ.{}", verb.to_uppercase()), n, "600000"]);
        let lua_cmd = self.twins.command(verb, &[l.as_bytes(), b"600000"]);
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
        let memory = Some((memory(&mut self.c, n), memory(&mut self.c, l)));
        Row {
            name: name.to_string(),
            native,
            lua,
            floor: None,
            memory,
        }
    }

    /// The claim scenarios of one replication mode (`suffix` names it).
    fn claim_scenarios(&mut self, rows: &mut Vec<Row>, suffix: &str) {
        for k in [1usize, 8, 64] {
            let name = format!("WCLAIM K={k}, 100 lanes{suffix}");
            if !selected(&name) {
                continue;
            }
            let calls = if k == 64 { 4_000 } else { CALLS };
            let depth = calls * k / 100 + k;
            let mut row = self.claims(&name, true, calls, &|c, p| lanes(c, p, 100, depth, k, None));
            row.floor = Some(self.core_floor(k, calls / ROUNDS, depth));
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
        let name = format!("cycle ENQUEUE→WCLAIM→ACK{suffix}");
        if selected(&name) {
            rows.push(self.cycle(&name, CALLS));
        }
    }

    /// Many lanes (flat cost, the O(1) removal) and REAP.
    fn lane_count_scenarios(&mut self, rows: &mut Vec<Row>) {
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
    fn with_replica(&mut self, name: &str) -> Row {
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

    /// ENQUEUE → WCLAIM → ACK of one job at a time over 100 lanes.
    fn cycle(&mut self, name: &str, jobs: usize) -> Row {
        let _: () = redis::cmd("FLUSHALL").arg("SYNC").query(&mut self.c).unwrap();
        let (mut native, mut lua) = (Tally::default(), Tally::default());
        let mut serial = 0;
        for _ in 0..ROUNDS {
            for (flavor, tally) in [("native", &mut native), ("lua", &mut lua)] {
                let p = if flavor == "native" { "cn{q}:" } else { "cl{q}:" };
                let build = |name: &str, rest: &[&str]| -> Cmd {
                    let mut a: Vec<&[u8]> = vec![p.as_bytes()];
                    a.extend(rest.iter().map(|s| s.as_bytes()));
                    if flavor == "native" {
                        common::native_command(name, &a)
                    } else {
                        self.twins.command(name, &a)
                    }
                };
                reset_stats(&mut self.c);
                let n = jobs / ROUNDS;
                let enqueues: Vec<Cmd> = (0..n)
                    .map(|i| {
                        serial += 1;
                        build(
                            "enqueue",
                            &[
                                &format!("lane{}", i % 100),
                                &serial.to_string(),
                                &format!("job{serial}"),
                            ],
                        )
                    })
                    .collect();
                let claims: Vec<Cmd> = (0..n).map(|_| build("wclaim", &["600000"])).collect();
                let (_, t1) = send(&mut self.c, &enqueues);
                let (replies, t2) = send(&mut self.c, &claims);
                let acks: Vec<Cmd> = replies
                    .iter()
                    .filter_map(|r| match r {
                        Value::Array(v) if v.len() > 2 => {
                            let Value::Int(token) = v[1] else { return None };
                            let job = common::text(&v[2]);
                            Some(build("ack", &[&token.to_string(), &job]))
                        }
                        _ => None,
                    })
                    .collect();
                let (_, t3) = send(&mut self.c, &acks);
                let names: &[&str] = if flavor == "native" {
                    &["emq.enqueue", "emq.wclaim", "emq.ack"]
                } else {
                    &["evalsha"]
                };
                tally.add(&commandstats(&mut self.c), names, acks.len() as u64, t1 + t2 + t3);
            }
        }
        Row {
            name: name.into(),
            native,
            lua,
            floor: None,
            memory: None,
        }
    }

    /// REAP COUNT 100 of `leases` expired leases, in each block.
    fn reap(&mut self, leases: usize) -> Row {
        let _: () = redis::cmd("FLUSHALL").arg("SYNC").query(&mut self.c).unwrap();
        let (mut native, mut lua) = (Tally::default(), Tally::default());
        for _ in 0..ROUNDS {
            for (flavor, tally) in [("native", &mut native), ("lua", &mut lua)] {
                let p = if flavor == "native" { "rn{q}:" } else { "rl{q}:" };
                let n = leases;
                // Expired leases, made natively for both (the state is the same).
                let _: () = redis::cmd("FLUSHALL").arg("SYNC").query(&mut self.c).unwrap();
                let mut enqueue = vec![b"EMQ.ENQUEUE".to_vec(), p.as_bytes().to_vec(), b"lane".to_vec()];
                for i in 0..n {
                    enqueue.push(i.to_string().into_bytes());
                    enqueue.push(format!("j{i}").into_bytes());
                }
                send(
                    &mut self.c,
                    &[enqueue, args(&["EMQ.WEIGHT", p, "lane", "1000000"])],
                );
                // emq.max-claim (1000) caps each turn.
                let claims = vec![args(&["EMQ.WCLAIM", p, "1"]); n.div_ceil(1000)];
                send(&mut self.c, &claims);
                std::thread::sleep(Duration::from_millis(5));
                let reap = if flavor == "native" {
                    args(&["EMQ.REAP", p, "COUNT", "100"])
                } else {
                    self.twins.command("reap", &[p.as_bytes(), b"COUNT", b"100"])
                };
                reset_stats(&mut self.c);
                let (replies, elapsed) = send(&mut self.c, &vec![reap; n / 100]);
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
                let stat = if flavor == "native" { "emq.reap" } else { "evalsha" };
                tally.add(&commandstats(&mut self.c), &[stat], reaped, elapsed);
            }
        }
        Row {
            name: format!("REAP of {leases} expired leases (COUNT 100)"),
            native,
            lua,
            floor: None,
            memory: None,
        }
    }

    /// The "core floor" of a `WCLAIM K=k, 100 lanes` turn: the summed
    /// usec_per_call of the core commands that do the same writes on the same
    /// state (LMOVE, ZPOPMIN k, ZADD of k leases, HSET of k records, HINCRBY),
    /// driven in the ring's own order.
    fn core_floor(&mut self, k: usize, calls: usize, depth: usize) -> f64 {
        let _: () = redis::cmd("FLUSHALL").arg("SYNC").query(&mut self.c).unwrap();
        let p = "f{q}:";
        lanes(&mut self.c, p, 100, depth, k, None);
        reset_stats(&mut self.c);
        let ring = format!("{p}gring");
        let mut cmds = Vec::with_capacity(calls * 5);
        for t in 0..calls {
            let (lane, visit) = (t % 100, t / 100);
            let first = lane * depth + visit * k + 1;
            cmds.push(args(&["LMOVE", &ring, &ring, "LEFT", "RIGHT"]));
            cmds.push(args(&[
                "ZPOPMIN",
                &format!("{p}g:l{lane}:pending"),
                &k.to_string(),
            ]));
            let mut leases = args(&["ZADD", &format!("{p}leases")]);
            let mut records = args(&["HSET", &format!("{p}jlease")]);
            for serial in first..first + k {
                leases.extend([b"1796000000000".to_vec(), format!("j{serial}").into_bytes()]);
                records.extend([
                    format!("j{serial}").into_bytes(),
                    format!("{serial} l{lane}").into_bytes(),
                ]);
            }
            cmds.push(leases);
            cmds.push(records);
            cmds.push(args(&[
                "HINCRBY",
                &format!("{p}gactive"),
                &format!("l{lane}"),
                &k.to_string(),
            ]));
        }
        send(&mut self.c, &cmds);
        let stats = commandstats(&mut self.c);
        ["lmove", "zpopmin", "zadd", "hset", "hincrby"]
            .iter()
            .map(|n| {
                stats
                    .get(*n)
                    .map_or(0.0, |(calls, usec)| *usec as f64 / (*calls).max(1) as f64)
            })
            .sum()
    }
}

/// Workers waiting for a steady arrival of jobs: blocking (`BLOCK`) or
/// polling (a plain claim, then 1 ms of sleep when empty).
struct Waiting {
    mode: &'static str,
    jobs: usize,
    /// Server CPU (user + sys) spent during the run, seconds.
    cpu: f64,
    /// Enqueue-to-claim latency, ms: median and 99th percentile.
    p50: f64,
    p99: f64,
    claims: u64,
}

fn server_cpu(c: &mut redis::Connection) -> f64 {
    ["used_cpu_user", "used_cpu_sys"]
        .iter()
        .map(|f| {
            common::info_text(c, "cpu", f)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        })
        .sum()
}

fn now_us() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros()
}

fn waiting(server: &Server, blocking: bool, jobs: usize, every: Duration, workers: usize) -> Waiting {
    let p = "w{q}:";
    let mut c = server.conn();
    let _: () = redis::cmd("FLUSHALL").arg("SYNC").query(&mut c).unwrap();
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
                    let Value::Array(turn) = reply else { continue };
                    if turn.len() < 3 {
                        if !blocking {
                            std::thread::sleep(Duration::from_millis(1));
                        }
                        continue;
                    }
                    let at = now_us();
                    let Value::Int(token) = turn[1] else { continue };
                    for job in &turn[2..] {
                        let id = common::text(job);
                        let sent: u128 = id.split(':').nth(1).and_then(|t| t.parse().ok()).unwrap_or(at);
                        let _ = tx.send((at.saturating_sub(sent)) as f64 / 1000.0);
                        let _: i64 = redis::cmd("EMQ.ACK")
                            .arg(p)
                            .arg(token)
                            .arg(&id)
                            .query(&mut w)
                            .unwrap();
                    }
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
        cpu,
        p50: pct(0.5),
        p99: pct(0.99),
        claims,
    }
}

/// Bytes held by the keys under `prefix` (`MEMORY USAGE … SAMPLES 0`).
fn memory(c: &mut redis::Connection, prefix: &str) -> u64 {
    let keys: Vec<String> = redis::cmd("KEYS").arg(format!("{prefix}*")).query(c).unwrap();
    let mut pipe = redis::pipe();
    for k in &keys {
        pipe.cmd("MEMORY").arg("USAGE").arg(k).arg("SAMPLES").arg(0);
    }
    let sizes: Vec<Option<u64>> = if keys.is_empty() {
        Vec::new()
    } else {
        pipe.query(c).unwrap()
    };
    sizes.into_iter().flatten().sum()
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

fn set_config(c: &mut redis::Connection, name: &str, value: &str) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query(c)
        .unwrap();
}

/// `EMQ_BENCH_ONLY=<part of a scenario name>` (or `=<the whole name>`) runs
/// the matching scenarios;
/// `EMQ_BENCH_NATIVE_ONLY=1` skips the Lua blocks (for profiling).
fn selected(name: &str) -> bool {
    std::env::var("EMQ_BENCH_ONLY").map_or(true, |only| match only.strip_prefix('=') {
        Some(exact) => name == exact,
        None => name.contains(&only),
    })
}

fn native_only() -> bool {
    std::env::var("EMQ_BENCH_NATIVE_ONLY").is_ok_and(|v| v == "1")
}

fn main() {
    // `cargo bench` passes `--bench`; a filter, if any, is ignored.
    let server = Server::start();
    let mut c = server.conn();
    let twins = Twins::load(&mut c);
    let mut bench = Bench { server, c, twins };
    let version = match common::info_text(&mut bench.c, "server", "valkey_version") {
        Some(v) => format!("Valkey {v}"),
        None => format!(
            "Redis {}",
            common::info_text(&mut bench.c, "server", "redis_version").unwrap_or_default()
        ),
    };

    // Every claim scenario in both replication modes; with `command` a claim
    // replicates as one EMQ.TURN, ENQUEUE and ACK as themselves (replicas
    // need the module). The lane-count scenarios and REAP (which replicates
    // its effects in both modes) run once.
    const COMMAND: &str = ", emq.replicate command";
    let mut rows = Vec::new();
    for (mode, suffix) in [("effects", ""), ("command", COMMAND)] {
        set_config(&mut bench.c, "emq.replicate", mode);
        bench.claim_scenarios(&mut rows, suffix);
        if mode == "effects" {
            bench.lane_count_scenarios(&mut rows);
        }
    }
    set_config(&mut bench.c, "emq.replicate", "effects");

    // Last among the claim scenarios: once a replica has attached, the server
    // keeps a replication backlog, and every later write would feed it.
    for (mode, suffix) in [("effects", ""), ("command", COMMAND)] {
        let name = format!("WCLAIM K=1, 100 lanes, a replica attached{suffix}");
        if selected(&name) {
            set_config(&mut bench.c, "emq.replicate", mode);
            rows.push(bench.with_replica(&name));
        }
    }
    set_config(&mut bench.c, "emq.replicate", "effects");

    let mut waits = Vec::new();
    if selected("workers") {
        for blocking in [true, false] {
            waits.push(waiting(
                &bench.server,
                blocking,
                1_000,
                Duration::from_millis(2),
                4,
            ));
        }
    }

    print_table(&rows, &version);
    if !waits.is_empty() {
        println!("\n4 workers, 250 jobs arriving every 10 ms:");
        println!(
            "{:<22} {:>14} {:>14} {:>12} {:>12}",
            "workers", "server CPU s", "claim calls", "pickup p50", "pickup p99"
        );
        for w in &waits {
            println!(
                "{:<22} {:>14.3} {:>14} {:>9.2} ms {:>9.2} ms",
                w.mode, w.cpu, w.claims, w.p50, w.p99
            );
        }
    }
    if std::env::var_os("EMQ_BENCH_ONLY").is_some() {
        return; // a partial run: the report of the full run stays
    }
    std::fs::create_dir_all("bench").expect("bench/");
    let mut report = json(&rows, &version);
    if !waits.is_empty() {
        let entries: Vec<String> = waits
            .iter()
            .map(|w| {
                format!(
                    "    {{\"mode\": \"{}\", \"jobs\": {}, \"server_cpu_s\": {:.3}, \"claim_calls\": {}, \"pickup_ms_p50\": {:.3}, \"pickup_ms_p99\": {:.3}}}",
                    w.mode, w.jobs, w.cpu, w.claims, w.p50, w.p99
                )
            })
            .collect();
        report = report.trim_end().trim_end_matches('}').trim_end().to_string();
        report.push_str(&format!(
            ",\n  \"waiting_workers\": [\n{}\n  ]\n}}\n",
            entries.join(",\n")
        ));
    }
    std::fs::write("bench/report.json", report).expect("bench/report.json");
    std::fs::write("bench/report.svg", svg(&rows, &version)).expect("bench/report.svg");
    println!("\nwrote bench/report.json and bench/report.svg");
}

fn print_table(rows: &[Row], version: &str) {
    println!("server {version}, pipeline depth {DEPTH}, {ROUNDS} alternating native/Lua block pairs per scenario\n");
    println!(
        "{:<66} {:>11} {:>11} {:>10} {:>10} {:>7} {:>11} {:>11} {:>9} {:>15}",
        "scenario",
        "native µs/c",
        "lua µs/call",
        "native/job",
        "lua/job",
        "ratio",
        "native c/s",
        "lua c/s",
        "floor µs",
        "memory KiB n/l"
    );
    for r in rows {
        println!(
            "{:<66} {:>11.2} {:>11.2} {:>10.2} {:>10.2} {:>6.1}x {:>11.0} {:>11.0} {:>9} {:>15}",
            r.name,
            r.native.per_call(),
            r.lua.per_call(),
            r.native.per_job(),
            r.lua.per_job(),
            r.lua.per_job() / r.native.per_job().max(1e-9),
            r.native.calls_per_sec(),
            r.lua.calls_per_sec(),
            r.floor.map_or("-".to_string(), |f| format!("{f:.2}")),
            r.memory
                .map_or("-".to_string(), |(n, l)| format!("{}/{}", n / 1024, l / 1024)),
        );
    }
}

fn json(rows: &[Row], version: &str) -> String {
    let mut out =
        format!("{{\n  \"server\": \"{version}\",\n  \"pipeline_depth\": {DEPTH},\n  \"scenarios\": [\n");
    for (i, r) in rows.iter().enumerate() {
        let tally = |t: &Tally| {
            format!(
                "{{\"calls\": {}, \"usec\": {}, \"jobs\": {}, \"usec_per_call\": {:.3}, \"usec_per_job\": {:.3}, \"calls_per_sec\": {:.0}}}",
                t.calls,
                t.usec,
                t.jobs,
                t.per_call(),
                t.per_job(),
                t.calls_per_sec()
            )
        };
        let _ = writeln!(
            out,
            "    {{\"name\": \"{}\", \"native\": {}, \"lua\": {}, \"ratio_per_job\": {:.2}, \"core_floor_usec\": {}, \"memory_bytes\": {}}}{}",
            r.name,
            tally(&r.native),
            tally(&r.lua),
            r.lua.per_job() / r.native.per_job().max(1e-9),
            r.floor.map_or("null".to_string(), |f| format!("{f:.3}")),
            r.memory.map_or("null".to_string(), |(n, l)| format!("{{\"native\": {n}, \"lua\": {l}}}")),
            if i + 1 < rows.len() { "," } else { "" }
        );
    }
    out.push_str("  ]\n}\n");
    out
}

/// Horizontal bars: µs per job, native and Lua, per scenario (log scale).
fn svg(rows: &[Row], version: &str) -> String {
    let (w, label_w, bar_h, gap) = (1000.0, 420.0, 14.0, 14.0);
    let h = 60.0 + rows.len() as f64 * (2.0 * bar_h + gap) + 30.0;
    let max = rows
        .iter()
        .map(|r| r.lua.per_job().max(r.native.per_job()))
        .fold(1.0, f64::max);
    let scale = |v: f64| ((v.max(0.1) / 0.1).log10() / (max / 0.1).log10()) * (w - label_w - 80.0);
    let mut s = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"12\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <text x=\"10\" y=\"20\" font-size=\"15\">emq: server µs per job, native vs Lua (log scale; {version})</text>\n\
         <rect x=\"10\" y=\"32\" width=\"12\" height=\"10\" fill=\"#2b7bb9\"/><text x=\"26\" y=\"41\">native</text>\n\
         <rect x=\"80\" y=\"32\" width=\"12\" height=\"10\" fill=\"#e8833a\"/><text x=\"96\" y=\"41\">Lua</text>\n"
    );
    for (i, r) in rows.iter().enumerate() {
        let y = 60.0 + i as f64 * (2.0 * bar_h + gap);
        let _ = writeln!(
            s,
            "<text x=\"10\" y=\"{}\">{}</text>",
            y + bar_h + 4.0,
            r.name
                .replace(", emq.replicate command", " [replicate command]")
                .replace('&', "&amp;")
                .replace('<', "&lt;")
        );
        for (j, (v, color)) in [(r.native.per_job(), "#2b7bb9"), (r.lua.per_job(), "#e8833a")]
            .iter()
            .enumerate()
        {
            let yy = y + j as f64 * bar_h;
            let bw = scale(*v);
            let _ = writeln!(
                s,
                "<rect x=\"{label_w}\" y=\"{yy}\" width=\"{bw:.1}\" height=\"{}\" fill=\"{color}\"/><text x=\"{:.1}\" y=\"{}\">{v:.2}</text>",
                bar_h - 2.0,
                label_w + bw + 4.0,
                yy + bar_h - 3.0
            );
        }
    }
    s.push_str("</svg>\n");
    s
}
