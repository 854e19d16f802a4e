//! Running a stream's commands natively: the fixtures (flat jobs as
//! EchoMQ's own scripts make and lease them, its queue-wide limits) with
//! core commands, the rest as EMQ commands.

use super::super::invariants::View;
use super::{Driver, Op};

/// EchoMQ's flat claim (`@claim`), a fixture: it leases the flat queue's
/// head so that the transitions meet flat jobs leased as EchoMQ leases them.
pub const FLAT_CLAIM: &str = "local popped = redis.call('ZPOPMIN', KEYS[1])
if #popped == 0 then return {} end
local id = popped[1]
local jk = ARGV[1] .. id
local att = redis.call('HINCRBY', jk, 'attempts', 1)
redis.call('HSET', jk, 'state', 'active')
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[2]), id)
return {id, redis.call('HGET', jk, 'payload'), att}";

/// The `flat-limits` fixture's commands on `p`: `P meta`'s concurrency and
/// max, and `P limiter` with a minute to live.
pub fn flat_limits(p: &str, args: &[String]) -> Vec<Vec<String>> {
    let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
    vec![
        s(&[
            "HSET",
            &format!("{p}meta"),
            "concurrency",
            &args[0],
            "max",
            &args[2],
        ]),
        s(&["SET", &format!("{p}limiter"), &args[1], "PX", "60000"]),
    ]
}

/// Runs `op` natively on `p` (the flat fixtures with core commands).
pub fn run_native(c: &mut super::super::Conn, p: &str, op: &Op) -> super::super::Reply {
    match op.name {
        "flat-enqueue" => {
            let job = &op.args[0];
            c.ok(&[
                "HSET",
                &format!("{p}job:{job}"),
                "state",
                "pending",
                "attempts",
                "0",
                "payload",
                "flat",
            ]);
            c.cmd(&["ZADD", &format!("{p}pending"), "0", job])
        }
        "flat-limits" => {
            for cmd in flat_limits(p, &op.args) {
                c.cmd(&cmd.iter().map(String::as_str).collect::<Vec<_>>())?;
            }
            Ok(super::super::Value::Int(1))
        }
        "flat-claim" => c.cmd(&[
            "EVAL",
            FLAT_CLAIM,
            "2",
            &format!("{p}pending"),
            &format!("{p}active"),
            &format!("{p}job:"),
            &op.args[0],
        ]),
        name => {
            let mut full = vec![format!("EMQ.{}", name.to_uppercase()), p.to_string()];
            full.extend(op.args.iter().cloned());
            c.cmd(&full.iter().map(String::as_str).collect::<Vec<_>>())
        }
    }
}

/// A random stream of `ops` commands on `p`, natively; every call succeeds
/// but for a stale token, a reprocess of a job not dead and a queue at its
/// ceiling (the stream draws them on purpose).
pub fn drive(c: &mut super::super::Conn, p: &str, seed: u64, ops: usize) {
    let mut driver = Driver::new(seed);
    for _ in 0..ops {
        let v = View::of(&super::super::snapshot::snapshot(c, p));
        let op = driver.next(&v);
        if let Err(e) = run_native(c, p, &op) {
            let expected = ["EMQSTALE", "EMQSTATE", "EMQRATE"];
            assert!(expected.iter().any(|c| e.starts_with(c)), "{op:?}: {e}");
        }
    }
}
