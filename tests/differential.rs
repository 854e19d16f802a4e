//! Native beside the twins (docs/twins.md): random streams drawn from every
//! command of docs/commands.md's first part, each run on the native command
//! (prefix `n{q}:`) and on the EchoMQ script it stands for, called as the
//! host calls it (prefix `l{q}:`), in one MULTI/EXEC (one clock). After each
//! command: the same reply, the same keyspace (lease deadlines and due times
//! aside), and the invariants on the native side. Where the module differs
//! from the scripts by design (docs/damage.md, "Named differences"), the
//! difference is applied to the twin's side by an adapter named after it, so
//! that the streams stay in step; each adapter is a named difference showing.

mod support;

use std::collections::BTreeMap;

use support::drive::{Driver, Op, FLAT_CLAIM, LANES};
use support::invariants::{check_invariants, View};
use support::snapshot::{diff, snapshot, Content, Snapshot};
use support::twins::{paired, same_reply, Twins};
use support::{Conn, Reply, Server, Value};

const N: &str = "n{q}:";
const L: &str = "l{q}:";

/// Rings `lane` on `P` (with a wake) if it is serviceable and not in the
/// ring: what the module does after a change the scripts do not follow.
const RING_IF: &str = "local p, g = ARGV[1], ARGV[2]
if redis.call('ZCARD', p .. 'g:' .. g .. ':pending') == 0 then return 0 end
if redis.call('SISMEMBER', p .. 'paused', g) == 1 then return 0 end
local lim = redis.call('HGET', p .. 'glimit', g)
local act = tonumber(redis.call('HGET', p .. 'gactive', g) or '0')
if lim and act >= tonumber(lim) then return 0 end
if redis.call('LPOS', p .. 'ring', g) then return 0 end
redis.call('RPUSH', p .. 'ring', g)
redis.call('LPUSH', p .. 'wake', '1')
redis.call('LTRIM', p .. 'wake', 0, 63)
return 1";

/// A lease left: the lane's count - 1 (removed at 0), then `RING_IF`.
const LEFT_LEASE: &str = "local p, g = ARGV[1], ARGV[2]
local act = redis.call('HINCRBY', p .. 'gactive', g, -1)
if act <= 0 then redis.call('HDEL', p .. 'gactive', g) end
return 1";

fn eval(c: &mut Conn, script: &str, args: &[&str]) {
    let mut full = vec!["EVAL", script, "0"];
    full.extend_from_slice(args);
    c.ok(&full);
}

/// On the twin's side, a lane job leaves properly where the script leaves it
/// in place: its lease (`was` active: the lane's count - 1, rung if now
/// serviceable) or its lane (out of the ring once empty).
fn leave_lane(c: &mut Conn, was: &str, lane: &str, job: &str) {
    if was == "active" {
        eval(c, LEFT_LEASE, &[L, lane]);
        eval(c, RING_IF, &[L, lane]);
    } else {
        let set = format!("{L}g:{lane}:pending");
        c.ok(&["ZREM", &set, job]);
        if c.int(&["ZCARD", &set]) == 0 {
            c.ok(&["LREM", &format!("{L}ring"), "0", lane]);
        }
    }
}

/// Where `job` was before the op, on the twin's side.
fn place(v: &View, job: &str) -> Option<String> {
    v.places(job).into_iter().next()
}

/// The named differences, applied to the twin's side after `op` ran there
/// (`pre`: its keyspace before). Returns the twin's reply as the module
/// gives it.
fn adapt(c: &mut Conn, op: &Op, pre: &View, lua: Reply) -> Reply {
    let job = op.job().unwrap_or("");
    let group = pre.rows.get(job).and_then(|r| r.get("group")).cloned();
    let was = place(pre, job);
    let row_state = |c: &mut Conn| support::fixtures::row(c, L, job, "state");
    match (op.name, &lua) {
        // DELAY makes a job leave its lease properly (the script leaves the
        // lane's count as it was), or where it waited.
        ("delay", Ok(_)) => match (was.as_deref(), &group) {
            (Some(w), Some(g)) if w == "active" || w.starts_with("g:") => leave_lane(c, w, g, job),
            (Some("pending"), _) => {
                c.ok(&["ZREM", &format!("{L}pending"), job]);
            }
            (Some("dead"), _) => {
                c.ok(&["ZREM", &format!("{L}dead"), job]);
            }
            _ => {}
        },
        // COMPLETE and RETRY of a job delayed or dead take it out of
        // P schedule / P dead first.
        ("complete" | "retry", Ok(_)) => {
            let now = row_state(c);
            for (set, state) in [("schedule", "scheduled"), ("dead", "dead")] {
                if was.as_deref() == Some(set) && now.as_deref() != Some(state) {
                    c.ok(&["ZREM", &format!("{L}{set}"), job]);
                }
            }
        }
        // EXTEND does not lease a job that is not leased.
        ("extend", Ok(Value::Int(1))) if was.as_deref() != Some("active") => {
            c.ok(&["ZREM", &format!("{L}active"), job]);
            return Ok(Value::Int(0));
        }
        // REMOVE takes a lane job out of its lane, or out of its lease
        // (its lane's count lowered): the script leaves both.
        ("remove", Ok(Value::Int(1))) => {
            if let (Some(w), Some(g)) = (was.as_deref(), &group) {
                if w == "active" || w.starts_with("g:") {
                    leave_lane(c, w, g, job);
                }
            }
        }
        // REPROCESS puts a dead lane job back in its lane (the script: in
        // the flat queue).
        ("reprocess", Ok(Value::Int(1))) => {
            if let Some(g) = &group {
                c.ok(&["ZREM", &format!("{L}pending"), job]);
                c.ok(&["ZADD", &format!("{L}g:{g}:pending"), "0", job]);
                eval(c, RING_IF, &[L, g]);
            }
        }
        // MEXTEND extends only leased jobs (the script adds a job not leased
        // to P active): such a job is one it did not extend.
        ("mextend", Ok(Value::Array(failed))) => {
            // The script fails a pair whose row is gone or has another
            // attempts (the same for each pair: attempts do not change).
            let script_failed = |job: &str, token: &str| {
                pre.rows
                    .get(job)
                    .and_then(|r| r.get("attempts"))
                    .map(String::as_str)
                    != Some(token)
            };
            let expected: Vec<String> = op.args[1..]
                .chunks(2)
                .filter(|p| script_failed(&p[0], &p[1]))
                .map(|p| p[0].clone())
                .collect();
            if failed.iter().map(Value::text).collect::<Vec<_>>() != expected {
                // Not the script's answer: left as it is, to be caught.
                return lua;
            }
            let mut out = Vec::new();
            for pair in op.args[1..].chunks(2) {
                let job = &pair[0];
                let leased = place(pre, job).as_deref() == Some("active");
                if !script_failed(job, &pair[1]) && !leased {
                    c.ok(&["ZREM", &format!("{L}active"), job]);
                }
                if script_failed(job, &pair[1]) || !leased {
                    out.push(Value::Bulk(job.clone().into_bytes()));
                }
            }
            return Ok(Value::Array(out));
        }
        // A death by stall rings its lane if that made it serviceable.
        ("reap", Ok(Value::Array(lists))) if lists.len() == 2 => {
            for dead in lists[1].items() {
                if let Some(g) = pre.rows.get(&dead.text()).and_then(|r| r.get("group")) {
                    eval(c, RING_IF, &[L, g]);
                }
            }
        }
        _ => {}
    }
    lua
}

/// After a stall sweep the module rings a lane at its death, the adapter
/// after the sweep: the same lanes, perhaps in another order. The ring is
/// then set to the module's order.
fn align_ring(c: &mut Conn, op: &Op) {
    if op.name != "reap" || !op.args.iter().any(|a| a == "MAXSTALLED") {
        return;
    }
    let (n, l) = (support::fixtures::ring(c, N), support::fixtures::ring(c, L));
    let (mut ns, mut ls) = (n.clone(), l.clone());
    ns.sort();
    ls.sort();
    if n != l && ns == ls {
        let key = format!("{L}ring");
        c.ok(&["DEL", &key]);
        let mut push = vec!["RPUSH", key.as_str()];
        push.extend(n.iter().map(String::as_str));
        c.ok(&push);
    }
}

/// The zsets whose scores are times.
const TIMED: [&str; 2] = ["active", "schedule"];

/// Where the clock moves inside one EXEC (Redis 7.0: `tol > 0`), the twin's
/// deadlines and due times come out a few ms after the native ones. Once
/// compared (within `tol`), they are set to the native's, so that both sides
/// order their leases and delays alike (equal scores are ordered by id: a
/// native tie the twin's side would not have). Returns whether any moved.
fn align_times(c: &mut Conn, n: &Snapshot, l: &Snapshot) -> bool {
    let mut moved = false;
    for set in TIMED {
        let (Some(Content::Zset(ns)), Some(Content::Zset(ls))) =
            (n.get(set.as_bytes()), l.get(set.as_bytes()))
        else {
            continue;
        };
        let theirs: BTreeMap<&[u8], f64> = ls.iter().map(|(m, s)| (m.as_slice(), *s)).collect();
        let key = format!("{L}{set}");
        for (m, s) in ns {
            if theirs.get(m.as_slice()).is_some_and(|t| t != s) {
                let score = (*s as i64).to_string();
                c.call(&[b"ZADD", key.as_bytes(), b"XX", score.as_bytes(), m])
                    .unwrap();
                moved = true;
            }
        }
    }
    moved
}

/// Before a sweep where the clock moves inside one EXEC: waits until the
/// server's clock has passed every deadline and due time that is not far
/// ahead (the 0 and 1 ms ones the stream makes), so that the native sweep
/// and the twin's, which read the clock a few ms apart, find the same ones
/// due.
fn past_near_times(c: &mut Conn, snap: &Snapshot) {
    let now = support::fixtures::now_ms(c);
    let near = TIMED
        .iter()
        .filter_map(|set| match snap.get(set.as_bytes()) {
            Some(Content::Zset(z)) => Some(z),
            _ => None,
        })
        .flatten()
        .map(|(_, s)| *s as i64)
        .filter(|s| *s <= now + 1_000)
        .max();
    if let Some(t) = near.filter(|t| *t >= now) {
        std::thread::sleep(std::time::Duration::from_millis((t - now + 1) as u64));
    }
}

/// Runs the fixture commands (flat jobs, as EchoMQ's own scripts make and
/// lease them) on both sides alike, in one MULTI/EXEC (one clock).
fn fixture(c: &mut Conn, op: &Op) -> (Reply, Reply) {
    let one = |p: &str| -> Vec<Vec<Vec<u8>>> {
        let v = |args: &[&str]| args.iter().map(|a| a.as_bytes().to_vec()).collect::<Vec<_>>();
        match op.name {
            "flat-limits" => support::drive::flat_limits(p, &op.args)
                .iter()
                .map(|cmd| v(&cmd.iter().map(String::as_str).collect::<Vec<_>>()))
                .collect(),
            "flat-enqueue" => {
                let job = &op.args[0];
                let row = format!("{p}job:{job}");
                vec![
                    v(&[
                        "HSET", &row, "state", "pending", "attempts", "0", "payload", "flat",
                    ]),
                    v(&["ZADD", &format!("{p}pending"), "0", job]),
                ]
            }
            _ => vec![v(&[
                "EVAL",
                FLAT_CLAIM,
                "2",
                &format!("{p}pending"),
                &format!("{p}active"),
                &format!("{p}job:"),
                &op.args[0],
            ])],
        }
    };
    let (n, l) = (one(N), one(L));
    let mut cmds = vec![vec![b"MULTI".to_vec()]];
    cmds.extend(n.iter().cloned());
    cmds.extend(l.iter().cloned());
    cmds.push(vec![b"EXEC".to_vec()]);
    let replies = c.pipeline(&cmds).expect("MULTI/EXEC");
    let exec = replies.last().cloned().unwrap().unwrap();
    let items = exec.items();
    (
        Ok(items[n.len() - 1].clone()),
        Ok(items[n.len() + l.len() - 1].clone()),
    )
}

/// One stream of `ops` commands from `seed`; the first divergence.
fn run(c: &mut Conn, twins: &Twins, tol: i64, seed: u64, ops: usize) -> Result<(), String> {
    c.ok(&["FLUSHALL"]);
    let mut driver = Driver::new(seed);
    let mut n_snap = snapshot(c, N);
    let mut l_snap = snapshot(c, L);
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for step in 0..ops {
        let v = View::of(&n_snap);
        let op = driver.next(&v);
        *counts.entry(op.name).or_default() += 1;
        let pre = View::of(&l_snap);
        if tol > 0 && matches!(op.name, "reap" | "promote") {
            past_near_times(c, &n_snap);
        }
        let (native, lua) = if op.name.starts_with("flat-") {
            fixture(c, &op)
        } else {
            let (na, la) = (op.with_prefix(N), op.with_prefix(L));
            let na: Vec<&[u8]> = na.iter().map(|a| a.as_bytes()).collect();
            let la: Vec<&[u8]> = la.iter().map(|a| a.as_bytes()).collect();
            paired(c, twins, op.name, &na, &la)
        };
        let mut lua = adapt(c, &op, &pre, lua);
        // A time left (RATETTL's PTTL) read on two clocks (Redis 7.0 reads
        // the wall clock per command, not once per EXEC).
        if let (Ok(Value::Int(n)), Ok(Value::Int(l))) = (&native, &lua) {
            if op.name == "ratettl" && (n - l).abs() <= tol {
                lua = native.clone();
            }
        }
        align_ring(c, &op);
        let at = || format!("seed {seed} step {step} {op:?}");
        if !same_reply(&native, &lua, tol) {
            return Err(format!("{}: native {native:?} vs lua {lua:?}", at()));
        }
        n_snap = snapshot(c, N);
        l_snap = snapshot(c, L);
        if let Some(d) = diff(&n_snap, &l_snap, tol as f64) {
            return Err(format!("{}: keyspaces differ: {d}", at()));
        }
        check_invariants(&n_snap).map_err(|e| format!("{}: {e}", at()))?;
        if tol > 0 && align_times(c, &n_snap, &l_snap) {
            l_snap = snapshot(c, L);
        }
    }
    for name in [
        "enqueue",
        "claim",
        "wclaim",
        "bclaim",
        "complete",
        "retry",
        "delay",
        "extend",
        "reap",
        "promote",
        "reassign",
        "qenqueue",
        "qschedule",
        "qclaim",
        "qbclaim",
        "mextend",
    ] {
        if counts.get(name).copied().unwrap_or(0) == 0 {
            return Err(format!("seed {seed}: the stream never ran {name}"));
        }
    }
    Ok(())
}

fn server() -> (Server, Conn, Twins) {
    let server = Server::start_with(&["--emq.reap-on-claim", "0"]);
    let mut c = server.conn();
    let twins = Twins::load(&mut c);
    (server, c, twins)
}

/// 26 streams of 2,000 commands: 52,000 in all, on each server; in four
/// tests, so that they run side by side.
fn streams(seeds: std::ops::Range<u64>) {
    let (server, mut c, twins) = server();
    let tol = server.clock_tolerance();
    for seed in seeds {
        if let Err(e) = run(&mut c, &twins, tol, seed, 2_000) {
            panic!("{e}");
        }
    }
}

#[test]
fn native_and_twins_agree_over_random_commands_1_of_4() {
    streams(0..7);
}

#[test]
fn native_and_twins_agree_over_random_commands_2_of_4() {
    streams(7..14);
}

#[test]
fn native_and_twins_agree_over_random_commands_3_of_4() {
    streams(14..20);
}

#[test]
fn native_and_twins_agree_over_random_commands_4_of_4() {
    streams(20..26);
}

/// The differential has teeth: a twin that clamps K without the headroom,
/// rings a lane without its wake, or is changed in any flat-queue command,
/// is caught.
#[test]
fn a_mutated_twin_is_caught() {
    for (script, from, to) in [
        (
            "gwclaim",
            "if tonumber(lim) - cur < k then k = tonumber(lim) - cur end",
            "",
        ),
        ("genqueue", "    redis.call('LPUSH', KEYS[7], '1')\n", ""),
        (
            "enqueue",
            "redis.call('ZADD', KEYS[2], 0, ARGV[1])",
            "redis.call('ZADD', KEYS[2], 1, ARGV[1])",
        ),
        ("schedule", "'attempts', '0',", "'attempts', '1',"),
        ("claim", "redis.call('HSET', row, 'state', 'active')\n", ""),
        ("bclaim", "  redis.call('HSET', row, 'state', 'active')\n", ""),
        (
            "extend_locks",
            "if att and att == ARGV[i + 1] then",
            "if att then",
        ),
        (
            "counts",
            "out[#out + 1] = redis.call('ZCARD', KEYS[i])",
            "out[#out + 1] = 0",
        ),
        ("state_lookup", "return 'scheduled' end", "return 'pending' end"),
        ("lane_counts", "out[i - 1] =", "out[i] ="),
        ("is_maxed", "ZCARD', KEYS[2]) >= cap", "ZCARD', KEYS[2]) > cap"),
        ("rate_ttl", "max <= tonumber", "max < tonumber"),
        ("update_data", "'payload', ARGV[1]", "'data', ARGV[1]"),
        ("update_progress", "'progress', ARGV[1])", "'progress', ARGV[2])"),
        ("add_log", "return n\n", "return n + 1\n"),
        ("remove_job", "for i = 2, 5 do", "for i = 2, 4 do"),
        ("reprocess", "redis.call('HDEL', KEYS[1], 'last_error')\n", ""),
        ("drain", "n = n + #ids", "n = n + #ids + 1"),
    ] {
        let (server, mut c, mut twins) = server();
        let src = support::twins::source(script);
        assert!(src.contains(from), "{script} holds the line mutated");
        let mutated = src.replace(from, to);
        let sha = c.call(&[b"SCRIPT", b"LOAD", mutated.as_bytes()]).unwrap().text();
        twins.replace(script, sha);
        let tol = server.clock_tolerance();
        let caught = (0..8).any(|seed| run(&mut c, &twins, tol, 100 + seed, 1_000).is_err());
        assert!(caught, "the mutation of {script} went unnoticed");
    }
    let _ = LANES;
}
