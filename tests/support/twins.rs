//! The Lua twins (`lua/`), each EchoMQ script the module's commands stand
//! for, loaded into a server and called as EchoMQ's host calls it: a native
//! command's arguments become the script's KEYS and ARGV of docs/twins.md's
//! table (and the host's own steps: `P meta`'s pause checked before a
//! claim, one @genqueue per pair).

use std::collections::BTreeMap;
use std::path::Path;

use super::resp::{Conn, Reply, Value};

mod job_path;

/// Every twin, by script name.
pub const SCRIPTS: &[&str] = &[
    "gclaim",
    "gwclaim",
    "gbclaim",
    "genqueue",
    "gweight",
    "gpause",
    "gresume",
    "glimit",
    "greassign",
    "gdrain",
    "complete",
    "retry",
    "delay",
    "extend_lock",
    "reap",
    "greap_group",
    "sweep_stalled",
    "promote",
    "queue_pause",
    "queue_resume",
    "enqueue",
    "schedule",
    "claim",
    "bclaim",
    "extend_locks",
    "update_data",
    "update_progress",
    "add_log",
    "remove_job",
    "reprocess",
    "drain",
    "counts",
    "state_lookup",
    "lane_counts",
    "is_maxed",
    "rate_ttl",
];

pub fn source(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("lua")
        .join(format!("{name}.lua"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub struct Twins {
    shas: BTreeMap<&'static str, String>,
}

/// What EchoMQ's host does for one native command: the script calls it
/// makes (their replies summed when more than one), or a reply it gives
/// without calling any (a claim on a paused queue).
pub enum Host {
    Calls(Vec<Vec<Vec<u8>>>),
    Answer(Value),
}

pub(super) fn b(s: &[u8]) -> Vec<u8> {
    s.to_vec()
}

impl Twins {
    pub fn load(c: &mut Conn) -> Twins {
        let mut shas = BTreeMap::new();
        for name in SCRIPTS {
            let src = source(name);
            let sha = c
                .call(&[b"SCRIPT", b"LOAD", src.as_bytes()])
                .unwrap_or_else(|e| panic!("loading the {name} twin: {e}"))
                .text();
            shas.insert(*name, sha);
        }
        Twins { shas }
    }

    /// Runs `script` as the one whose SHA is `sha` (a test's mutant).
    pub fn replace(&mut self, script: &'static str, sha: String) {
        self.shas.insert(script, sha);
    }

    /// `EVALSHA` of `script` with `keys` and `argv`.
    pub fn evalsha(&self, script: &str, keys: &[Vec<u8>], argv: &[Vec<u8>]) -> Vec<Vec<u8>> {
        let mut full = vec![
            b"EVALSHA".to_vec(),
            self.shas[script].clone().into_bytes(),
            keys.len().to_string().into_bytes(),
        ];
        full.extend(keys.iter().chain(argv).cloned());
        full
    }

    pub fn call(&self, c: &mut Conn, script: &str, keys: &[Vec<u8>], argv: &[Vec<u8>]) -> Reply {
        let cmd = self.evalsha(script, keys, argv);
        c.call(&cmd.iter().map(Vec::as_slice).collect::<Vec<_>>())
    }

    /// The script calls EchoMQ's host makes for `EMQ.<name> args…` (`args[0]`
    /// is the prefix). A claim reads `P meta` first, on `c`.
    pub fn host(&self, c: &mut Conn, name: &str, args: &[&[u8]]) -> Host {
        let p = args[0];
        let k = |suffix: &str| [p, suffix.as_bytes()].concat();
        let lane_key = |lane: &[u8]| [p, b"g:", lane, b":pending"].concat();
        let row = |job: &[u8]| [p, b"job:", job].concat();
        let one = |script: &str, keys: Vec<Vec<u8>>, argv: Vec<Vec<u8>>| {
            Host::Calls(vec![self.evalsha(script, &keys, &argv)])
        };
        match name {
            "claim" | "wclaim" | "bclaim" => {
                if c.call(&[b"HGET", &k("meta"), b"paused"]) != Ok(Value::Nil) {
                    return Host::Answer(Value::Array(vec![]));
                }
                let script = match name {
                    "claim" => "gclaim",
                    "wclaim" => "gwclaim",
                    _ => "gbclaim",
                };
                one(script, vec![k("ring"), k("active")], vec![b(p), b(args[1])])
            }
            "enqueue" => {
                let lane = args[1];
                let calls = args[2..]
                    .chunks(2)
                    .map(|pair| {
                        self.evalsha(
                            "genqueue",
                            &[
                                row(pair[0]),
                                lane_key(lane),
                                k("ring"),
                                k("paused"),
                                k("glimit"),
                                k("gactive"),
                                k("wake"),
                            ],
                            &[b(pair[0]), b(pair[1]), b(lane)],
                        )
                    })
                    .collect();
                Host::Calls(calls)
            }
            "weight" => one("gweight", vec![k("gweight")], vec![b(args[1]), b(args[2])]),
            "pause" => one("gpause", vec![k("paused"), k("ring")], vec![b(args[1])]),
            "resume" => one(
                "gresume",
                vec![k("paused"), k("ring"), k("glimit"), k("gactive"), k("wake")],
                vec![b(p), b(args[1])],
            ),
            "limit" => one(
                "glimit",
                vec![k("glimit"), k("gactive"), k("ring"), k("paused"), k("wake")],
                vec![b(p), b(args[1]), b(args[2])],
            ),
            "reassign" => one(
                "greassign",
                vec![
                    row(args[1]),
                    lane_key(args[2]),
                    k("ring"),
                    k("paused"),
                    k("glimit"),
                    k("gactive"),
                    k("wake"),
                ],
                vec![b(args[1]), b(args[2]), b(p)],
            ),
            "drain" => one(
                "gdrain",
                vec![b(p), lane_key(args[1]), k("ring")],
                vec![b(args[1])],
            ),
            "complete" => one(
                "complete",
                vec![k("active"), row(args[1])],
                vec![b(args[1]), b(args[2]), b(p)],
            ),
            "retry" => one(
                "retry",
                vec![k("active"), k("schedule"), k("dead"), row(args[1])],
                args[1..6].iter().map(|a| b(a)).chain([b(p)]).collect(),
            ),
            "delay" => one(
                "delay",
                vec![row(args[1]), k("active"), k("schedule")],
                vec![b(args[1]), b(args[2]), args[3].to_ascii_lowercase(), b(args[4])],
            ),
            "extend" => one(
                "extend_lock",
                vec![k("active"), row(args[1])],
                vec![b(args[1]), b(args[2]), b(args[3])],
            ),
            "reap" => {
                let opt = |word: &[u8]| {
                    args.windows(2)
                        .find(|w| w[0].eq_ignore_ascii_case(word))
                        .map(|w| b(w[1]))
                };
                let count = opt(b"COUNT").unwrap_or_else(|| b"100".to_vec());
                match (opt(b"GROUP"), opt(b"MAXSTALLED")) {
                    (Some(lane), _) => one("greap_group", vec![k("active"), b(p)], vec![lane, count]),
                    (_, Some(max)) => one(
                        "sweep_stalled",
                        vec![k("active"), k("pending"), k("dead")],
                        vec![b(p), max, count],
                    ),
                    _ => one("reap", vec![k("active"), k("pending")], vec![b(p)]),
                }
            }
            "promote" => {
                let count = args.get(2).map_or_else(|| b"100".to_vec(), |n| b(n));
                one("promote", vec![k("schedule"), k("pending")], vec![b(p), count])
            }
            "qpause" => one("queue_pause", vec![k("meta")], vec![]),
            "qresume" => one("queue_resume", vec![k("meta")], vec![]),
            other => self
                .job_path(c, other, args)
                .unwrap_or_else(|| panic!("no twin stands for EMQ.{other}")),
        }
    }

    /// Runs `EMQ.<name> args…` as EchoMQ's host runs the script for it.
    pub fn like_native(&self, c: &mut Conn, name: &str, args: &[&[u8]]) -> Reply {
        match self.host(c, name, args) {
            Host::Answer(v) => Ok(v),
            Host::Calls(calls) => combine(
                calls
                    .iter()
                    .map(|cmd| c.call(&cmd.iter().map(Vec::as_slice).collect::<Vec<_>>()))
                    .collect(),
            ),
        }
    }
}

/// One reply of several script calls: the first error, else the integers
/// summed (ENQUEUE's count), or the one reply.
pub fn combine(replies: Vec<Reply>) -> Reply {
    if replies.len() == 1 {
        return replies.into_iter().next().unwrap();
    }
    let mut sum = 0;
    for r in replies {
        sum += r?.int();
    }
    Ok(Value::Int(sum))
}

/// The native command's full argv: `EMQ.<NAME> args…`.
pub fn native_command(name: &str, args: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut full = vec![format!("EMQ.{}", name.to_uppercase()).into_bytes()];
    full.extend(args.iter().map(|a| a.to_vec()));
    full
}

/// Runs the native command (with `native_args`) and its twin (with
/// `lua_args`) inside one MULTI/EXEC, so that both read the same server
/// clock: their deadlines can be compared exactly (Valkey; Redis 7.0 reads
/// the wall clock twice).
pub fn paired(
    c: &mut Conn,
    twins: &Twins,
    name: &str,
    native_args: &[&[u8]],
    lua_args: &[&[u8]],
) -> (Reply, Reply) {
    let host = twins.host(c, name, lua_args);
    let mut cmds = vec![vec![b"MULTI".to_vec()], native_command(name, native_args)];
    let n_lua = match &host {
        Host::Calls(calls) => {
            cmds.extend(calls.iter().cloned());
            calls.len()
        }
        Host::Answer(_) => 0,
    };
    cmds.push(vec![b"EXEC".to_vec()]);
    let replies = c.pipeline(&cmds).expect("MULTI/EXEC");
    let exec = replies.last().cloned().expect("EXEC").expect("EXEC ran");
    let mut it = exec.items().iter().cloned().map(|v| match v {
        Value::Error(e) => Err(e),
        v => Ok(v),
    });
    let native = it.next().expect("native reply");
    let lua = match host {
        Host::Answer(v) => Ok(v),
        Host::Calls(_) => combine(it.take(n_lua).collect()),
    };
    (native, lua)
}

/// Replies equal but for times (integers past 10^12 ms, i.e. epoch times),
/// which may differ by `tolerance`.
pub fn same_reply(a: &Reply, b: &Reply, tolerance: i64) -> bool {
    fn same(a: &Value, b: &Value, tol: i64) -> bool {
        match (a, b) {
            (Value::Int(x), Value::Int(y)) if *x > 1_000_000_000_000 => (x - y).abs() <= tol,
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q, tol))
            }
            _ => a == b,
        }
    }
    match (a, b) {
        (Ok(x), Ok(y)) => same(x, y, tolerance),
        (Err(x), Err(y)) => x.split(" script:").next() == y.split(" script:").next(),
        _ => false,
    }
}
