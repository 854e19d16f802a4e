//! A module that panics takes the whole server down unless the panic is
//! caught: every command runs inside one boundary that turns a panic into an
//! error reply. This forces one and shows the server lives on.

mod common;

use std::collections::BTreeSet;

use common::*;

#[test]
fn a_panic_in_a_command_is_an_error_reply_and_the_server_lives_on() {
    let mut server = Server::start_module_args(&["debug-panic"]);
    let mut c = server.conn();
    cmd(&mut c, &["EMQ.ENQUEUE", "q:", "a", "1", "job"]);
    let before = digest(&mut c);
    for _ in 0..3 {
        let r = cmd(&mut c, &["EMQ.DEBUG-PANIC"]);
        assert_eq!(
            r.err(),
            Some("ERR internal error in the emq module (a bug: please report it)")
        );
    }
    assert!(server.alive(), "the server survived");
    assert!(
        server.log().contains("emq: panic: "),
        "the panic is in the server's log"
    );
    assert_eq!(
        cmd(&mut c, &["PING"]),
        Reply::Ok(Value::SimpleString("PONG".into()))
    );
    assert_eq!(digest(&mut c), before, "nothing changed");
    let (lane, _, jobs) = cmd(&mut c, &["EMQ.WCLAIM", "q:", "1000"])
        .claim()
        .expect("still serving");
    assert_eq!((lane.as_str(), jobs.len()), ("a", 1));
}

#[test]
fn the_panicking_test_command_is_absent_from_an_ordinary_load() {
    let server = Server::start();
    let mut c = server.conn();
    let r = cmd(&mut c, &["EMQ.DEBUG-PANIC"]);
    assert!(r.err().is_some_and(|e| e.contains("unknown command")), "{r:?}");
}

/// Junk for any argument position.
fn junk(rng: &mut rng::Rng) -> Vec<u8> {
    let pool: [&[u8]; 24] = [
        b"",
        b"0",
        b"-1",
        b"1",
        b"7",
        b"nan",
        b"inf",
        b"-inf",
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
        b"h{q}:",
        b"lane",
        b"job",
        b"job2",
        b"max-deliveries",
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
    let mut rng = rng::Rng::new(2026);
    let names = [
        "CLAIM", "WCLAIM", "WEIGHT", "ENQUEUE", "ACK", "NACK", "EXTEND", "REAP", "LIMIT", "PAUSE", "RESUME",
        "REASSIGN", "LANE", "POLICY", "DEAD", "REVIVE", "QUEUE", "LANES", "REPAIR",
    ];
    let (mut refused, mut accepted) = (0, 0);
    for round in 0..3_000 {
        if round % 50 == 0 {
            // A live queue, sometimes with corrupt stored values or wrong types.
            let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
            cmd(&mut c, &["EMQ.ENQUEUE", "h{q}:", "lane", "1", "job", "2", "job2"]);
            cmd(&mut c, &["EMQ.WCLAIM", "h{q}:", "60000"]);
            cmd(&mut c, &["EMQ.ENQUEUE", "h{q}:", "lane", "3", "dead1"]);
            cmd(&mut c, &["EMQ.POLICY", "h{q}:", "max-deliveries", "1"]);
            cmd(&mut c, &["EMQ.WCLAIM", "h{q}:", "1"]);
            std::thread::sleep(std::time::Duration::from_millis(2));
            cmd(&mut c, &["EMQ.REAP", "h{q}:"]);
            match rng.below(10) {
                0 => drop(cmd(&mut c, &["HSET", "h{q}:gweight", "lane", "x"])),
                1 => drop(cmd(&mut c, &["HSET", "h{q}:glimit", "lane", "-"])),
                2 => drop(cmd(&mut c, &["HSET", "h{q}:gactive", "lane", "1.5"])),
                3 => drop(cmd(&mut c, &["HSET", "h{q}:jlease", "job", "junk"])),
                4 => drop(cmd(&mut c, &["SET", "h{q}:gpaused", "x"])),
                5 => drop(cmd(&mut c, &["HSET", "h{q}:policy", "max-deliveries", "x"])),
                6 => drop(cmd(&mut c, &["HSET", "h{q}:jdead", "job2", "junk"])),
                7 => drop(cmd(&mut c, &["SET", "h{q}:jreturns", "x"])),
                8 => drop(cmd(&mut c, &["SET", "h{q}:dead", "x"])),
                _ => {}
            }
        }
        let name = format!("EMQ.{}", names[rng.below(names.len() as u64) as usize]);
        let mut argv: Vec<Vec<u8>> = vec![name.clone().into_bytes()];
        for _ in 0..rng.below(7) {
            argv.push(junk(&mut rng));
        }
        let before = digest(&mut c);
        let reply = call(&mut c, &refs(&argv));
        match reply.err() {
            Some(e) => {
                refused += 1;
                assert!(
                    e.starts_with("ERR ") || e.starts_with("WRONGTYPE "),
                    "{name}: {}",
                    e.chars().take(200).collect::<String>()
                );
                assert_eq!(
                    digest(&mut c),
                    before,
                    "{name} was refused but changed the dataset"
                );
            }
            None => accepted += 1,
        }
    }
    assert!(server.alive());
    assert!(
        refused > 1_000 && accepted > 50,
        "refused {refused}, accepted {accepted}"
    );
    eprintln!("hostile calls: {refused} refused unchanged, {accepted} accepted");
}

#[test]
fn acl_key_patterns_apply_to_the_prefix() {
    let server = Server::start();
    let mut c = server.conn();
    let _: () = redis::cmd("ACL")
        .arg(&[
            "SETUSER",
            "w",
            "on",
            ">pw",
            "~emq:{a}:*",
            "+emq.enqueue",
            "+emq.wclaim",
            "+emq.ack",
            "+emq.lane",
        ])
        .query(&mut c)
        .unwrap();
    let mut w = redis::Client::open(format!("redis://w:pw@127.0.0.1:{}/", server.port))
        .unwrap()
        .get_connection()
        .unwrap();
    assert_eq!(
        cmd(&mut w, &["EMQ.ENQUEUE", "emq:{a}:", "l", "1", "j"]),
        Reply::Ok(Value::Int(1))
    );
    let (_, token, _) = cmd(&mut w, &["EMQ.WCLAIM", "emq:{a}:", "1000"]).claim().unwrap();
    assert_eq!(
        cmd(&mut w, &["EMQ.ACK", "emq:{a}:", &token.to_string(), "j"]),
        Reply::Ok(Value::Int(1))
    );
    for args in [
        &["EMQ.ENQUEUE", "emq:{b}:", "l", "1", "j"][..],
        &["EMQ.WCLAIM", "emq:{b}:", "1000"],
        &["EMQ.LANE", "emq:{b}:", "l"],
    ] {
        let r = cmd(&mut w, args);
        assert!(
            r.err().is_some_and(|e| e.starts_with("NOPERM")),
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
    /// Jobs whose ENQUEUE was acknowledged as added.
    added: BTreeSet<String>,
    /// Jobs whose ACK was acknowledged (by whichever client held the lease).
    acked: BTreeSet<String>,
    /// Jobs of an ENQUEUE or ACK whose reply never came (the server died).
    in_doubt: BTreeSet<String>,
    ops: usize,
}

/// A random mix of every command on queue `p`, until `ops` or the first
/// failed call (a dead server).
fn mixed_worker(mut c: redis::Connection, p: &str, id: usize, ops: usize, seed: u64) -> Ledger {
    let mut rng = rng::Rng::new(seed);
    let lanes = ["a", "b", "c", "d", "e"];
    let mut ledger = Ledger::default();
    let mut held: Vec<(i64, Vec<String>)> = Vec::new();
    for n in 0..ops {
        let lane = lanes[rng.below(5) as usize];
        let roll = rng.below(20);
        let (args, doubt): (Vec<String>, Vec<String>) = if roll < 6 {
            let jobs = [format!("t{id}-{n}a"), format!("t{id}-{n}b")];
            let mut a = vec!["EMQ.ENQUEUE".into(), p.into(), lane.into()];
            for j in &jobs {
                a.extend([rng.range(0, 100).to_string(), j.clone()]);
            }
            (a, jobs.to_vec())
        } else if roll < 11 {
            let lease = if rng.chance(1, 3) { "5" } else { "60000" };
            (
                vec![
                    if roll < 8 { "EMQ.WCLAIM" } else { "EMQ.CLAIM" }.into(),
                    p.into(),
                    lease.into(),
                ],
                vec![],
            )
        } else if roll < 15 && !held.is_empty() {
            let (token, mut jobs) = held.swap_remove(rng.below(held.len() as u64) as usize);
            let job = jobs.pop().unwrap_or_default();
            if !jobs.is_empty() {
                held.push((token, jobs));
            }
            let verb = match rng.below(4) {
                0 => "EMQ.NACK",
                1 => "EMQ.EXTEND",
                _ => "EMQ.ACK",
            };
            let mut a = vec![verb.to_string(), p.into(), token.to_string()];
            if verb == "EMQ.EXTEND" {
                a.push("60000".into());
            }
            a.push(job.clone());
            let doubt = if verb == "EMQ.ACK" { vec![job] } else { vec![] };
            (a, doubt)
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
                4 => vec![
                    "EMQ.WEIGHT".into(),
                    p.into(),
                    lane.into(),
                    rng.range(1, 4).to_string(),
                ],
                _ => vec![
                    "EMQ.REASSIGN".into(),
                    p.into(),
                    format!("t{id}-{}a", rng.below(n as u64 + 1)),
                    lane.into(),
                    lanes[rng.below(5) as usize].into(),
                ],
            };
            (a, vec![])
        };
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let mut command = redis::cmd(argv[0]);
        for a in &argv[1..] {
            command.arg(*a);
        }
        let reply: Value = match command.query(&mut c) {
            Ok(v) => v,
            Err(e) if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() => {
                ledger.in_doubt.extend(doubt);
                return ledger;
            }
            Err(e) => panic!("{argv:?}: {e}"),
        };
        ledger.ops += 1;
        match argv[0] {
            "EMQ.ENQUEUE" => {
                assert_eq!(reply, Value::Int(2), "fresh ids are always added");
                ledger.added.extend(doubt);
            }
            "EMQ.ACK" if reply == Value::Int(1) => ledger.acked.extend(doubt),
            "EMQ.WCLAIM" | "EMQ.CLAIM" => {
                if let Value::Array(v) = reply {
                    if let (Some(Value::Int(token)), true) = (v.get(1), v.len() > 2) {
                        held.push((*token, v[2..].iter().map(text).collect()));
                    }
                }
            }
            _ => {}
        }
    }
    ledger
}

/// Jobs that must exist (added, not acked) and jobs that may (in doubt).
fn expected(ledgers: &[Ledger]) -> (BTreeSet<String>, BTreeSet<String>) {
    let acked: BTreeSet<&String> = ledgers.iter().flat_map(|l| &l.acked).collect();
    let maybe: BTreeSet<String> = ledgers.iter().flat_map(|l| &l.in_doubt).cloned().collect();
    // A job whose ACK was in flight when the server died may or may not be gone.
    let alive = ledgers
        .iter()
        .flat_map(|l| &l.added)
        .filter(|j| !acked.contains(j) && !maybe.contains(*j))
        .cloned()
        .collect();
    (alive, maybe)
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
    let ops: usize = ledgers.iter().map(|l| l.ops).sum();
    assert_eq!(ops, 8 * 1_500);
    let (alive, maybe) = expected(&ledgers);
    assert!(maybe.is_empty());
    let snap = snapshot(&mut server.conn(), p);
    if let Err(broken) = common::invariants::check_invariants(&snap, &alive, &maybe) {
        panic!("after {ops} concurrent operations: {broken}");
    }
    eprintln!(
        "load: {ops} operations by 8 clients, {} jobs alive, conservation holds",
        alive.len()
    );
}

#[test]
fn a_kill_9_loses_no_acknowledged_write() {
    let server = Server::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let p = "crash{q}:";
    let port = server.port;
    let ledgers: Vec<Ledger> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..4)
            .map(|id| {
                let c = server.conn();
                s.spawn(move || mixed_worker(c, p, id, 1_000_000, 7_000 + id as u64))
            })
            .collect();
        std::thread::sleep(std::time::Duration::from_millis(1_500));
        server.kill9();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let ops: usize = ledgers.iter().map(|l| l.ops).sum();
    assert!(ops > 500, "the workload ran ({ops} operations) before the kill");
    let server = server.restart(&["--appendonly", "yes"]);
    assert_ne!(server.port, 0, "restarted (was on {port})");
    let (alive, maybe) = expected(&ledgers);
    let snap = snapshot(&mut server.conn(), p);
    if let Err(broken) = common::invariants::check_invariants(&snap, &alive, &maybe) {
        panic!("after kill -9 and an AOF restart ({ops} acknowledged operations): {broken}");
    }
    eprintln!(
        "crash: {ops} acknowledged operations, {} jobs alive, {} in doubt, conservation holds",
        alive.len(),
        maybe.len()
    );
}
