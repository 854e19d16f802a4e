//! `make profile`: instructions of each measured send, counted where a
//! client pays for a command — at the function the server calls for it
//! (`ValkeyModuleCommandDispatcher` for a module's command, `evalShaCommand`
//! for a script, `lmoveCommand` … for a core command).
//!
//! The server runs under callgrind with instrumentation off
//! (`EMQ_PROFILE_DIR` names where it writes). Around each measured send the
//! probe turns instrumentation on, and after it off and dumps: the dump holds
//! that send's commands alone (the setup's ENQUEUEs pass through the same
//! dispatcher, uncounted). Without `EMQ_PROFILE_DIR` a send is a send.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use super::drive::{send, Cmd};
use super::support::{info_field, Conn, Value};

/// Instructions and calls of one measured thing, summed over its blocks.
#[derive(Default, Clone, Copy)]
pub struct Cost {
    pub instructions: u64,
    pub calls: u64,
    pub jobs: u64,
}

impl Cost {
    pub fn per_call(&self) -> u64 {
        self.instructions / self.calls.max(1)
    }

    pub fn per_job(&self) -> u64 {
        self.instructions / self.jobs.max(1)
    }
}

pub struct Probe {
    /// The server's pid and where callgrind writes, when profiling.
    on: Option<(String, PathBuf)>,
    /// (scenario, what) → its cost, in the order first measured.
    pub costs: Vec<((String, String), Cost)>,
}

impl Probe {
    pub fn new(c: &mut Conn) -> Probe {
        let on = std::env::var_os("EMQ_PROFILE_DIR").map(|dir| {
            let pid = info_field(c, "server", "process_id").expect("process_id");
            (pid, PathBuf::from(dir))
        });
        Probe {
            on,
            costs: Vec::new(),
        }
    }

    pub fn active(&self) -> bool {
        self.on.is_some()
    }

    /// Sends `cmds`; when profiling, adds the instructions spent inside
    /// `procs` to `(scenario, what)`, with the calls of them and `jobs`
    /// (how many jobs the send served, for a figure per job; `None`: its
    /// calls). Returns the replies.
    pub fn send(
        &mut self,
        c: &mut Conn,
        (scenario, what): (&str, &str),
        procs: &[&str],
        cmds: &[Cmd],
        jobs: impl Fn(&[Value]) -> Option<u64>,
    ) -> (Vec<Value>, std::time::Duration) {
        let Some((pid, dir)) = self.on.clone() else {
            return send(c, cmds);
        };
        control(&pid, &["-i", "on"]);
        let out = send(c, cmds);
        control(&pid, &["-i", "off"]);
        control(&pid, &["-d", "block"]);
        let dump = newest_dump(&dir, &pid);
        let (instructions, calls) = measured(&dump, procs);
        // Which dump is which (`PROFILE_OF` in scripts/profile.sh).
        let line = format!("{}\t{scenario}\t{what}\t\n", dump.display());
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("blocks.tsv"))
            .and_then(|mut f| std::io::Write::write_all(&mut f, line.as_bytes()))
            .expect("blocks.tsv");
        let jobs = jobs(&out.0).unwrap_or(calls);
        let key = (scenario.to_string(), what.to_string());
        let at = match self.costs.iter().position(|(k, _)| *k == key) {
            Some(i) => i,
            None => {
                self.costs.push((key, Cost::default()));
                self.costs.len() - 1
            }
        };
        let cost = &mut self.costs[at].1;
        cost.instructions += instructions;
        cost.calls += calls;
        cost.jobs += jobs;
        out
    }

    /// The table of what was measured, and `dispatch.tsv` beside the dumps
    /// (scenario, what, per call, per job) for `make perf-guard`.
    pub fn report(&self) {
        let Some((_, dir)) = &self.on else { return };
        println!("\ninstructions at the command's dispatcher (callgrind, the whole command):");
        println!(
            "{:<64} {:<28} {:>9} {:>12} {:>12}",
            "scenario", "what", "calls", "per call", "per job"
        );
        let mut tsv = String::new();
        for ((scenario, what), cost) in &self.costs {
            println!(
                "{:<64} {:<28} {:>9} {:>12} {:>12}",
                scenario,
                what,
                cost.calls,
                cost.per_call(),
                cost.per_job()
            );
            tsv.push_str(&format!(
                "{scenario}\t{what}\t{}\t{}\n",
                cost.per_call(),
                cost.per_job()
            ));
        }
        std::fs::write(dir.join("dispatch.tsv"), tsv).expect("dispatch.tsv");
    }
}

fn control(pid: &str, args: &[&str]) {
    let status = Command::new("callgrind_control")
        .args(args)
        .arg(pid)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("callgrind_control");
    assert!(status.success(), "callgrind_control {args:?} {pid}");
}

/// The dump just written: `cg.<pid>.<n>` with the largest `n`.
fn newest_dump(dir: &std::path::Path, pid: &str) -> PathBuf {
    let prefix = format!("cg.{pid}.");
    std::fs::read_dir(dir)
        .expect("profile dir")
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            let n: u64 = name.strip_prefix(&prefix)?.parse().ok()?;
            Some((n, dir.join(name)))
        })
        .max()
        .expect("a callgrind dump")
        .1
}

/// Instructions inside `procs` (inclusive) and the calls of them, from one
/// dump (`callgrind_annotate --inclusive=yes` for the first, the dump's
/// call lines for the second).
fn measured(dump: &std::path::Path, procs: &[&str]) -> (u64, u64) {
    let out = Command::new("callgrind_annotate")
        .args(["--inclusive=yes", "--threshold=100"])
        .arg(dump)
        .output()
        .expect("callgrind_annotate");
    let annotated = String::from_utf8_lossy(&out.stdout);
    // A line: `figure (share)  file:function [object]`; a function met in
    // several files counts its largest (its whole inclusive cost).
    let mut inclusive: BTreeMap<&str, u64> = BTreeMap::new();
    for line in annotated.lines() {
        let Some((figure, rest)) = line.trim().split_once(' ') else {
            continue;
        };
        let Ok(n) = figure.replace(',', "").parse::<u64>() else {
            continue;
        };
        let place = rest.split_once("%)").map_or(rest, |(_, r)| r).trim();
        let place = place.split_once(" [").map_or(place, |(p, _)| p);
        let Some((_, function)) = place.split_once(':') else {
            continue;
        };
        if let Some(p) = procs.iter().find(|p| **p == function) {
            let e = inclusive.entry(p).or_default();
            *e = (*e).max(n);
        }
    }
    let raw = std::fs::read_to_string(dump).expect("dump");
    let mut calls = 0u64;
    let mut lines = raw.lines();
    while let Some(line) = lines.next() {
        let Some(name) = line.strip_prefix("cfn=") else {
            continue;
        };
        let name = name.rsplit_once(") ").map_or(name, |(_, n)| n);
        if procs.contains(&name) {
            if let Some(n) = lines.next().and_then(|l| l.strip_prefix("calls=")) {
                calls += n
                    .split(' ')
                    .next()
                    .and_then(|n| n.parse::<u64>().ok())
                    .unwrap_or(0);
            }
        }
    }
    (inclusive.values().sum(), calls)
}
