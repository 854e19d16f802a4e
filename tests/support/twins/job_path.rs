//! The host's calls for SPEC section 9's commands (the flat queue, a job's
//! edits, the metric reads), as EchoMQ's host makes them.

use super::super::resp::{Conn, Value};
use super::{b, Host, Twins};

impl Twins {
    /// The script calls for `EMQ.<name> args…`, if it is one of these.
    pub(super) fn job_path(&self, c: &mut Conn, name: &str, args: &[&[u8]]) -> Option<Host> {
        let p = args[0];
        let k = |suffix: &str| [p, suffix.as_bytes()].concat();
        let row = |job: &[u8]| [p, b"job:", job].concat();
        let one = |script: &str, keys: Vec<Vec<u8>>, argv: Vec<Vec<u8>>| {
            Host::Calls(vec![self.evalsha(script, &keys, &argv)])
        };
        Some(match name {
            "qenqueue" => Host::Calls(
                args[1..]
                    .chunks(2)
                    .map(|pair| {
                        self.evalsha(
                            "enqueue",
                            &[row(pair[0]), k("pending")],
                            &[b(pair[0]), b(pair[1])],
                        )
                    })
                    .collect(),
            ),
            "qschedule" => one(
                "schedule",
                vec![row(args[1]), k("schedule")],
                vec![b(args[1]), b(args[2]), args[3].to_ascii_lowercase(), b(args[4])],
            ),
            "qclaim" | "qbclaim" => {
                if c.call(&[b"HGET", &k("meta"), b"paused"]) != Ok(Value::Nil) {
                    return Some(Host::Answer(Value::Array(vec![])));
                }
                let mut argv = vec![k("job:"), b(args[1])];
                if name == "qbclaim" {
                    argv.push(b(args[2]));
                }
                let script = if name == "qclaim" { "claim" } else { "bclaim" };
                one(script, vec![k("pending"), k("active")], argv)
            }
            "mextend" => one(
                "extend_locks",
                vec![k("active")],
                [b(p)].into_iter().chain(args[1..].iter().map(|a| b(a))).collect(),
            ),
            "setdata" => one("update_data", vec![row(args[1])], vec![b(args[2])]),
            "progress" => one(
                "update_progress",
                vec![row(args[1])],
                vec![b(args[2]), b(args[1]), b(p)],
            ),
            "log" => {
                let keep = if args.len() > 3 { b(args[4]) } else { Vec::new() };
                one(
                    "add_log",
                    vec![row(args[1]), [row(args[1]), b":logs".to_vec()].concat()],
                    vec![b(args[2]), keep],
                )
            }
            "remove" => {
                let dedup = if args.len() > 2 { b(args[3]) } else { Vec::new() };
                let de = [p, b"de:", &dedup].concat();
                one(
                    "remove_job",
                    vec![
                        row(args[1]),
                        k("pending"),
                        k("active"),
                        k("schedule"),
                        k("dead"),
                        de,
                    ],
                    vec![b(args[1]), dedup],
                )
            }
            "reprocess" => one(
                "reprocess",
                vec![row(args[1]), k("dead"), k("pending")],
                vec![b(args[1])],
            ),
            "qdrain" => {
                let mut keys = vec![b(p), k("pending")];
                if args.len() > 1 {
                    keys.push(k("schedule"));
                }
                one("drain", keys, vec![])
            }
            "counts" => {
                let split = args
                    .iter()
                    .position(|a| a.eq_ignore_ascii_case(b"METRICS"))
                    .unwrap_or(args.len());
                let keys = [b(p)]
                    .into_iter()
                    .chain(args[1..split].iter().map(|s| k(&String::from_utf8_lossy(s))))
                    .collect();
                one(
                    "counts",
                    keys,
                    args.get(split + 1..)
                        .unwrap_or_default()
                        .iter()
                        .map(|a| b(a))
                        .collect(),
                )
            }
            "state" => one(
                "state_lookup",
                vec![k("pending"), k("active"), k("schedule"), k("dead"), row(args[1])],
                vec![b(args[1])],
            ),
            "depths" => one("lane_counts", vec![b(p)], args.iter().map(|a| b(a)).collect()),
            "maxed" => one("is_maxed", vec![k("meta"), k("active")], vec![]),
            "ratettl" => one("rate_ttl", vec![k("limiter"), k("meta")], vec![b(args[1])]),
            _ => return None,
        })
    }
}
