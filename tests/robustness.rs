//! A module that panics takes the whole server down unless the panic is
//! caught; a module that half-applies a refused call damages queues. Panics
//! become error replies, hostile calls change nothing when refused, and a
//! concurrent load or a `kill -9` loses no acknowledged job.

mod support;

use std::collections::BTreeSet;

use support::fixtures::served;
use support::invariants::{check_invariants, View};
use support::replication::digest;
use support::rng::Rng;
use support::snapshot::snapshot;
use support::{Conn, Server, Value};

#[test]
fn a_panic_in_a_command_is_an_error_reply_and_the_server_lives_on() {
    let mut server = Server::start_module_args(&["debug-panic"]);
    let mut c = server.conn();
    c.ok(&["EMQ.ENQUEUE", "q:", "a", "JOB1", "x"]);
    let before = digest(&mut c);
    for _ in 0..3 {
        assert_eq!(
            c.cmd(&["EMQ.DEBUG-PANIC"]).unwrap_err(),
            "ERR internal error in the emq module (a bug: please report it)"
        );
    }
    assert!(server.alive(), "the server survived");
    assert!(
        server.log().contains("emq: panic: "),
        "the panic is in the server's log"
    );
    assert_eq!(digest(&mut c), before, "nothing changed");
    assert_eq!(
        served(&c.ok(&["EMQ.WCLAIM", "q:", "1000"])).len(),
        1,
        "still serving"
    );
}

#[test]
fn the_panicking_test_command_is_absent_from_an_ordinary_load() {
    let server = Server::start();
    let r = server.conn().cmd(&["EMQ.DEBUG-PANIC"]);
    assert!(r.unwrap_err().contains("unknown command"));
}

/// Junk for any argument position.
fn junk(rng: &mut Rng) -> Vec<u8> {
    let pool: [&[u8]; 26] = [
        b"",
        b"0",
        b"-1",
        b"1",
        b"7",
        b"nan",
        b"inf",
        b"1e400",
        b"9223372036854775808",
        b"-9223372036854775809",
        b"1099511627777",
        b"1.5",
        b"a\0b",
        b"\r\n",
        b"BLOCK",
        b"COUNT",
        b"NONE",
        b"GROUP",
        b"MAXSTALLED",
        b"IN",
        b"h{q}:",
        b"lane",
        b"JOB1",
        b"JOB2",
        b"max-stalled",
        b"\xff\xfe",
    ];
    match rng.below(40) {
        0 => vec![b'x'; 1 << 20],
        _ => pool[rng.below(pool.len() as u64) as usize].to_vec(),
    }
}

#[test]
fn thousands_of_hostile_calls_change_nothing_when_refused_and_never_kill_the_server() {
    let mut server = Server::start();
    let mut c = server.conn();
    let mut rng = Rng::new(2026);
    let names = [
        "CLAIM", "WCLAIM", "BCLAIM", "ENQUEUE", "WEIGHT", "PAUSE", "RESUME", "LIMIT", "REASSIGN", "DRAIN",
        "COMPLETE", "RETRY", "DELAY", "EXTEND", "REAP", "PROMOTE", "QPAUSE", "QRESUME", "POLICY", "DEAD",
        "REVIVE", "LANE", "QUEUE", "LANES", "REPAIR", "TURN",
    ];
    let (mut refused, mut accepted) = (0, 0);
    for round in 0..3_000 {
        if round % 50 == 0 {
            // A live queue, sometimes with damaged stored values or wrong types.
            c.ok(&["FLUSHALL"]);
            c.ok(&[
                "EMQ.ENQUEUE",
                "h{q}:",
                "lane",
                "JOB1",
                "x",
                "JOB2",
                "y",
                "JOB3",
                "z",
            ]);
            c.ok(&["EMQ.WCLAIM", "h{q}:", "60000"]);
            c.ok(&["EMQ.RETRY", "h{q}:", "JOB1", "1", "0", "1", "e"]);
            c.ok(&["EMQ.CLAIM", "h{q}:", "1"]);
            let damage: &[&str] = match rng.below(10) {
                0 => &["HSET", "h{q}:gweight", "lane", "x"],
                1 => &["HSET", "h{q}:glimit", "lane", "-"],
                2 => &["HSET", "h{q}:gactive", "lane", "1.5"],
                3 => &["HSET", "h{q}:job:JOB2", "attempts", "junk"],
                4 => &["SET", "h{q}:paused", "x"],
                5 => &["HSET", "h{q}:meta", "max-stalled", "x"],
                6 => &["SET", "h{q}:job:JOB3", "x"],
                7 => &["SET", "h{q}:metrics:completed", "x"],
                8 => &["SET", "h{q}:schedule", "x"],
                _ => &["PING"],
            };
            let _ = c.cmd(damage);
        }
        let name = format!("EMQ.{}", names[rng.below(names.len() as u64) as usize]);
        let mut argv: Vec<Vec<u8>> = vec![name.clone().into_bytes()];
        for _ in 0..rng.below(7) {
            argv.push(junk(&mut rng));
        }
        let before = digest(&mut c);
        match c.call(&argv.iter().map(Vec::as_slice).collect::<Vec<_>>()) {
            Err(e) => {
                refused += 1;
                let class = e.split(' ').next().unwrap_or("");
                assert!(
                    ["ERR", "WRONGTYPE", "EMQSTALE", "EMQKIND"].contains(&class),
                    "{name}: {}",
                    e.chars().take(200).collect::<String>()
                );
                assert_eq!(
                    digest(&mut c),
                    before,
                    "{name} was refused but changed the dataset"
                );
            }
            Ok(_) => accepted += 1,
        }
    }
    assert!(server.alive());
    assert!(
        refused > 1_000 && accepted > 50,
        "refused {refused}, accepted {accepted}"
    );
}

#[test]
fn acl_key_patterns_apply_to_the_prefix() {
    let server = Server::start();
    let mut c = server.conn();
    c.ok(&[
        "ACL",
        "SETUSER",
        "w",
        "on",
        ">pw",
        "~emq:{a}:*",
        "+emq.enqueue",
        "+emq.wclaim",
        "+emq.complete",
        "+emq.lane",
    ]);
    let mut w = server.conn();
    w.ok(&["AUTH", "w", "pw"]);
    assert_eq!(w.int(&["EMQ.ENQUEUE", "emq:{a}:", "l", "JOB1", "x"]), 1);
    let j = served(&w.ok(&["EMQ.WCLAIM", "emq:{a}:", "1000"]))[0].clone();
    assert_eq!(w.int(&["EMQ.COMPLETE", "emq:{a}:", &j.0, &j.2.to_string()]), 1);
    for args in [
        &["EMQ.ENQUEUE", "emq:{b}:", "l", "JOB1", "x"][..],
        &["EMQ.WCLAIM", "emq:{b}:", "1000"],
        &["EMQ.LANE", "emq:{b}:", "l"],
    ] {
        let r = w.cmd(args);
        assert!(
            r.as_ref().err().is_some_and(|e| e.starts_with("NOPERM")),
            "{args:?}: {r:?}"
        );
    }
    assert!(
        snapshot(&mut c, "emq:{b}:").is_empty(),
        "nothing written under the other prefix"
    );
}

/// What one client knows for sure after its part of a concurrent workload.
#[derive(Default)]
struct Ledger {
    /// Jobs whose ENQUEUE was acknowledged.
    added: BTreeSet<String>,
    /// Jobs whose COMPLETE was acknowledged.
    completed: BTreeSet<String>,
    /// Jobs of an ENQUEUE or COMPLETE whose reply never came (the server died).
    in_doubt: BTreeSet<String>,
    ops: usize,
}

/// A random mix of commands on queue `p`, until `ops` or the first failed
/// call (a dead server).
fn mixed_worker(mut c: Conn, p: &str, id: usize, ops: usize, seed: u64) -> Ledger {
    let mut rng = Rng::new(seed);
    let lanes = ["a", "b", "c", "d", "e"];
    let mut ledger = Ledger::default();
    let mut held: Vec<(String, String)> = Vec::new();
    for n in 0..ops {
        let lane = lanes[rng.below(5) as usize];
        let roll = rng.below(20);
        let (args, doubt): (Vec<String>, Vec<String>) = if roll < 6 {
            let jobs = [format!("JOB{id}-{n}a"), format!("JOB{id}-{n}b")];
            let mut a = vec!["EMQ.ENQUEUE".into(), p.into(), lane.into()];
            for j in &jobs {
                a.extend([j.clone(), "x".into()]);
            }
            (a, jobs.to_vec())
        } else if roll < 11 {
            let lease = if rng.chance(1, 3) { "5" } else { "60000" };
            let verb = ["EMQ.CLAIM", "EMQ.WCLAIM", "EMQ.BCLAIM"][rng.below(3) as usize];
            (vec![verb.into(), p.into(), lease.into()], vec![])
        } else if roll < 16 && !held.is_empty() {
            let (job, token) = held.swap_remove(rng.below(held.len() as u64) as usize);
            match rng.below(5) {
                0 => (
                    vec![
                        "EMQ.RETRY".into(),
                        p.into(),
                        job,
                        token,
                        "0".into(),
                        "3".into(),
                        "e".into(),
                    ],
                    vec![],
                ),
                1 => (
                    vec!["EMQ.EXTEND".into(), p.into(), job, token, "60000".into()],
                    vec![],
                ),
                2 => (
                    vec!["EMQ.DELAY".into(), p.into(), job, token, "IN".into(), "0".into()],
                    vec![],
                ),
                _ => (
                    vec!["EMQ.COMPLETE".into(), p.into(), job.clone(), token],
                    vec![job],
                ),
            }
        } else {
            let a: Vec<String> = match rng.below(6) {
                0 => vec!["EMQ.REAP".into(), p.into()],
                1 => vec![
                    "EMQ.LIMIT".into(),
                    p.into(),
                    lane.into(),
                    ["1", "2", "NONE"][rng.below(3) as usize].into(),
                ],
                2 => vec!["EMQ.PAUSE".into(), p.into(), lane.into()],
                3 => vec!["EMQ.RESUME".into(), p.into(), lane.into()],
                4 => vec!["EMQ.PROMOTE".into(), p.into()],
                _ => vec![
                    "EMQ.REASSIGN".into(),
                    p.into(),
                    format!("JOB{id}-{}a", rng.below(n as u64 + 1)),
                    lane.into(),
                ],
            };
            (a, vec![])
        };
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let reply = match c.try_cmd(&argv) {
            Ok(r) => r,
            Err(_) => {
                ledger.in_doubt.extend(doubt);
                return ledger;
            }
        };
        ledger.ops += 1;
        match (argv[0], reply) {
            ("EMQ.ENQUEUE", r) => {
                assert_eq!(r, Ok(Value::Int(2)), "fresh ids are always added");
                ledger.added.extend(doubt);
            }
            ("EMQ.COMPLETE", Ok(Value::Int(1))) => ledger.completed.extend(doubt),
            ("EMQ.CLAIM" | "EMQ.WCLAIM" | "EMQ.BCLAIM", Ok(v)) => {
                held.extend(served(&v).into_iter().map(|(j, _, t, _)| (j, t.to_string())));
            }
            // Another client took the job meanwhile: a stale token, refused.
            (_, Err(e)) if e.starts_with("EMQSTALE") => {}
            (_, Err(e)) => panic!("{argv:?}: {e}"),
            _ => {}
        }
    }
    ledger
}

/// Checks what the ledgers say against the keyspace: every job added and not
/// completed has its row and its one place; no job completed has a row
/// (jobs in doubt may be either).
fn conserved(c: &mut Conn, p: &str, ledgers: &[Ledger]) {
    let snap = snapshot(c, p);
    check_invariants(&snap).unwrap_or_else(|e| panic!("{e}"));
    let v = View::of(&snap);
    let doubt: BTreeSet<&String> = ledgers.iter().flat_map(|l| &l.in_doubt).collect();
    for l in ledgers {
        for job in l.added.iter().filter(|j| !doubt.contains(j)) {
            let completed = ledgers.iter().any(|l| l.completed.contains(job));
            assert_eq!(
                v.rows.contains_key(job),
                !completed,
                "{job}: completed {completed}"
            );
        }
    }
}

#[test]
fn eight_concurrent_clients_lose_nothing() {
    let server = Server::start();
    let p = "load{q}:";
    let ledgers: Vec<Ledger> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..8)
            .map(|id| {
                let c = server.conn();
                s.spawn(move || mixed_worker(c, p, id, 1_500, 900 + id as u64))
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(ledgers.iter().map(|l| l.ops).sum::<usize>(), 8 * 1_500);
    conserved(&mut server.conn(), p, &ledgers);
}

#[test]
fn a_kill_9_loses_no_acknowledged_write() {
    let server = Server::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let p = "crash{q}:";
    let ledgers: Vec<Ledger> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|id| {
                let c = server.conn();
                s.spawn(move || mixed_worker(c, p, id, 1_000_000, 7_000 + id as u64))
            })
            .collect();
        // Long enough for hundreds of writes, longer on a slow server (under
        // valgrind, `make memcheck`, on a busy machine).
        let run = 1_500 * u64::from(support::server::slow().clamp(1, 4));
        std::thread::sleep(std::time::Duration::from_millis(run));
        server.kill9();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ops: usize = ledgers.iter().map(|l| l.ops).sum();
    assert!(ops > 500, "the workload ran ({ops} operations) before the kill");
    let server = server.restart(&["--appendonly", "yes"]);
    conserved(&mut server.conn(), p, &ledgers);
}
