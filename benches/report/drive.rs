//! Driving a server and reading what it measured: pipelined sends, `INFO
//! commandstats`, server CPU, memory; each side of a scenario (native, or
//! the twin as EchoMQ's host calls it). No scenario logic here.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::support::twins::{native_command, Host, Twins};
use super::support::{info_field, Conn, Value};

/// Commands per pipeline write.
pub const DEPTH: usize = 64;

pub type Cmd = Vec<Vec<u8>>;

pub fn args(parts: &[&str]) -> Cmd {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}

/// Sends `cmds` pipelined, `DEPTH` at a time; returns the replies and the
/// time. An error reply is a broken bench: it panics.
pub fn send(c: &mut Conn, cmds: &[Cmd]) -> (Vec<Value>, Duration) {
    let start = Instant::now();
    let mut replies = Vec::with_capacity(cmds.len());
    for chunk in cmds.chunks(DEPTH) {
        for (cmd, reply) in chunk.iter().zip(c.pipeline(chunk).expect("pipeline")) {
            replies.push(reply.unwrap_or_else(|e| panic!("{}: {e}", String::from_utf8_lossy(&cmd[0]))));
        }
    }
    (replies, start.elapsed())
}

/// One side of a scenario: the native commands, the twins, or (`make
/// profile`) the C floor module's commands doing the same work through the
/// same module API (`benches/floor/floor.c`).
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Native,
    Lua,
    Floor,
}

/// Where the server enters a module's command.
pub const DISPATCHER: &str = "ValkeyModuleCommandDispatcher";

impl Side {
    /// The server's commandstats names of this side's calls for `verbs`.
    pub fn stats(self, verbs: &[&str]) -> Vec<String> {
        match self {
            Side::Native => verbs.iter().map(|v| format!("emq.{v}")).collect(),
            Side::Lua => vec!["evalsha".to_string()],
            Side::Floor => verbs.iter().map(|v| format!("floor.{v}")).collect(),
        }
    }

    /// The function the server calls for this side's commands.
    pub fn procs(self) -> &'static [&'static str] {
        match self {
            Side::Native | Side::Floor => &[DISPATCHER],
            Side::Lua => &["evalShaCommand"],
        }
    }

    /// How `make profile` names this side's `verb`.
    pub fn what(self, verb: &str) -> String {
        let side = match self {
            Side::Native => "native",
            Side::Lua => "twin",
            Side::Floor => "C floor",
        };
        format!("{side} {}", verb.to_uppercase())
    }

    /// The calls that run `EMQ.<name> p rest…` on this side (a twin's
    /// ENQUEUE of several pairs is one script call per pair, as the host's).
    /// A claim's twin is built once per scenario: the host's read of `P
    /// meta` before it is not measured, so the twin's side counts the
    /// script alone.
    pub fn calls(self, c: &mut Conn, twins: &Twins, name: &str, p: &str, rest: &[&str]) -> Vec<Cmd> {
        let mut a: Vec<&[u8]> = vec![p.as_bytes()];
        a.extend(rest.iter().map(|s| s.as_bytes()));
        match self {
            Side::Native => vec![native_command(name, &a)],
            Side::Floor => {
                let mut cmd = vec![format!("FLOOR.{}", name.to_uppercase()).into_bytes()];
                cmd.extend(a.iter().map(|s| s.to_vec()));
                vec![cmd]
            }
            Side::Lua => match twins.host(c, name, &a) {
                Host::Calls(calls) => calls,
                Host::Answer(_) => panic!("{name}: the queue is paused"),
            },
        }
    }
}

/// `INFO commandstats`: command → (calls, usec).
pub fn commandstats(c: &mut Conn) -> BTreeMap<String, (u64, u64)> {
    let info = c.ok(&["INFO", "commandstats"]).text();
    let mut out = BTreeMap::new();
    for line in info.lines() {
        let Some((name, fields)) = line.strip_prefix("cmdstat_").and_then(|r| r.split_once(':')) else {
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

pub fn reset_stats(c: &mut Conn) {
    c.ok(&["CONFIG", "RESETSTAT"]);
}

pub fn flush(c: &mut Conn) {
    c.ok(&["FLUSHALL", "SYNC"]);
}

pub fn set_config(c: &mut Conn, name: &str, value: &str) {
    c.ok(&["CONFIG", "SET", name, value]);
}

/// The jobs of a claim reply, `(id, attempts)`: CLAIM's one flat job, or
/// WCLAIM's and BCLAIM's list of jobs.
pub fn jobs(reply: &Value) -> Vec<(String, String)> {
    let items = reply.items();
    match items.first() {
        None => Vec::new(),
        Some(Value::Array(_)) => items
            .iter()
            .map(|j| (j.items()[0].text(), j.items()[2].text()))
            .collect(),
        Some(_) => vec![(items[0].text(), items[2].text())],
    }
}

/// Jobs served by claim replies.
pub fn served(replies: &[Value]) -> u64 {
    replies.iter().map(|r| jobs(r).len() as u64).sum()
}

/// The server's CPU (user + sys) so far, seconds.
pub fn server_cpu(c: &mut Conn) -> f64 {
    ["used_cpu_user", "used_cpu_sys"]
        .iter()
        .map(|f| {
            info_field(c, "cpu", f)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        })
        .sum()
}

/// Bytes held by the keys matching `pattern` (`MEMORY USAGE … SAMPLES 0`).
pub fn memory(c: &mut Conn, pattern: &str) -> u64 {
    let keys = c.ok(&["KEYS", pattern]).texts();
    let cmds: Vec<Cmd> = keys
        .iter()
        .map(|k| args(&["MEMORY", "USAGE", k, "SAMPLES", "0"]))
        .collect();
    send(c, &cmds)
        .0
        .iter()
        .map(|v| if let Value::Int(n) = v { *n as u64 } else { 0 })
        .sum()
}

/// Server time and jobs of one side of a scenario, summed over its blocks.
#[derive(Default, Clone, Copy, serde::Serialize)]
pub struct Tally {
    pub calls: u64,
    pub usec: u64,
    pub jobs: u64,
    #[serde(skip)]
    pub elapsed: Duration,
}

impl Tally {
    /// Adds the calls and usec of `names` in `stats`, and what the block did.
    pub fn add(
        &mut self,
        stats: &BTreeMap<String, (u64, u64)>,
        names: &[String],
        jobs: u64,
        elapsed: Duration,
    ) {
        for n in names {
            if let Some((calls, usec)) = stats.get(n) {
                self.calls += calls;
                self.usec += usec;
            }
        }
        self.jobs += jobs;
        self.elapsed += elapsed;
    }

    pub fn per_call(&self) -> f64 {
        self.usec as f64 / self.calls.max(1) as f64
    }

    pub fn per_job(&self) -> f64 {
        self.usec as f64 / self.jobs.max(1) as f64
    }
}

/// `EMQ_BENCH_ONLY=<part of a scenario name>` (or `=<the whole name>`) runs
/// the matching scenarios; several, `|` between them.
pub fn selected(name: &str) -> bool {
    std::env::var("EMQ_BENCH_ONLY").map_or(true, |only| {
        only.split('|').any(|one| match one.strip_prefix('=') {
            Some(exact) => name == exact,
            None => name.contains(one),
        })
    })
}

/// `EMQ_BENCH_NATIVE_ONLY=1` skips the Lua blocks and the floors (for
/// profiling the native command alone).
pub fn native_only() -> bool {
    std::env::var("EMQ_BENCH_NATIVE_ONLY").is_ok_and(|v| v == "1")
}

/// The C floor module is loaded (`make profile`), and `name` is a scenario
/// it does the work of (a sound queue without rates, count-fair).
pub fn c_floor(name: &str) -> bool {
    const FLOORED: [&str; 5] = [
        "WCLAIM K=1, 100 lanes",
        "WCLAIM, 20,000 lanes at ceiling 1 draining to none",
        "WCLAIM K=8, 100 lanes",
        "BCLAIM of 32, 1,600 lanes",
        "batched cycle ENQUEUE×8→WCLAIM K=8→COMPLETE×8, 100 lanes",
    ];
    c_floor_loaded()
        && FLOORED
            .iter()
            .any(|f| name == *f || name.strip_prefix(f) == Some(", emq.replicate command"))
}

/// `EMQ_BENCH_C_FLOOR=1`: the server has the C floor module loaded.
pub fn c_floor_loaded() -> bool {
    std::env::var("EMQ_BENCH_C_FLOOR").is_ok_and(|v| v == "1")
}

/// Whether the floors run: not when only the native blocks do, unless
/// `EMQ_BENCH_FLOORS=1` (for profiling the floor's core commands without
/// the twins', which run the same commands).
pub fn floors() -> bool {
    !native_only() || std::env::var("EMQ_BENCH_FLOORS").is_ok_and(|v| v == "1")
}
