//! Driving a server and reading what it measured: pipelined sends, `INFO
//! commandstats`, server CPU, memory. No scenario logic here.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use super::common::{self, Value};

/// Commands per pipeline write.
pub const DEPTH: usize = 64;

pub type Cmd = Vec<Vec<u8>>;

pub fn args(parts: &[&str]) -> Cmd {
    parts.iter().map(|p| p.as_bytes().to_vec()).collect()
}

/// Sends `cmds` pipelined, `DEPTH` at a time; returns the replies and the time.
pub fn send(c: &mut redis::Connection, cmds: &[Cmd]) -> (Vec<Value>, Duration) {
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
pub fn commandstats(c: &mut redis::Connection) -> BTreeMap<String, (u64, u64)> {
    let info: String = redis::cmd("INFO").arg("commandstats").query(c).unwrap();
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

pub fn reset_stats(c: &mut redis::Connection) {
    let _: () = redis::cmd("CONFIG").arg("RESETSTAT").query(c).unwrap();
}

pub fn flush(c: &mut redis::Connection) {
    let _: () = redis::cmd("FLUSHALL").arg("SYNC").query(c).unwrap();
}

pub fn set_config(c: &mut redis::Connection, name: &str, value: &str) {
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg(name)
        .arg(value)
        .query(c)
        .unwrap();
}

/// Jobs served by claim replies (`[lane, deadline, job…]`).
pub fn served(replies: &[Value]) -> u64 {
    replies
        .iter()
        .map(|r| match r {
            Value::Array(v) if v.len() > 2 => (v.len() - 2) as u64,
            _ => 0,
        })
        .sum()
}

/// The server's CPU (user + sys) so far, seconds.
pub fn server_cpu(c: &mut redis::Connection) -> f64 {
    ["used_cpu_user", "used_cpu_sys"]
        .iter()
        .map(|f| {
            common::info_text(c, "cpu", f)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        })
        .sum()
}

/// Bytes held by the keys matching `pattern` (`MEMORY USAGE … SAMPLES 0`).
pub fn memory(c: &mut redis::Connection, pattern: &str) -> u64 {
    let keys: Vec<String> = redis::cmd("KEYS").arg(pattern).query(c).unwrap();
    if keys.is_empty() {
        return 0;
    }
    let mut pipe = redis::pipe();
    for k in &keys {
        pipe.cmd("MEMORY").arg("USAGE").arg(k).arg("SAMPLES").arg(0);
    }
    let sizes: Vec<Option<u64>> = pipe.query(c).unwrap();
    sizes.into_iter().flatten().sum()
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
        names: &[&str],
        jobs: u64,
        elapsed: Duration,
    ) {
        for n in names {
            if let Some((calls, usec)) = stats.get(*n) {
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
