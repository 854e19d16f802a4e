//! An error means nothing changed, whichever key is at fault: every command,
//! each in a state where it writes (a lane that joins the ring, a lease that
//! ends, a job that comes back, a stray that moves), run once with each of
//! the queue's keys holding another type and once with each denied to the
//! caller. It either succeeds or leaves the dataset as it was: no command
//! may find a bad key after its first write (docs/damage.md).

mod support;

use std::time::Duration;

use support::replication::digest;
use support::{Conn, Server};

const P: &str = "e{q}:";

/// The queue's fixed keys (docs/keyspace.md).
const KEYS: &[&str] = &[
    "ring",
    "paused",
    "gweight",
    "glimit",
    "gactive",
    "active",
    "schedule",
    "dead",
    "pending",
    "wake",
    "meta",
    "metrics:completed",
    "metrics:failed",
    "grate",
    "gtat",
    "gnext",
];

/// A state and a command that writes in it.
struct Case {
    name: &'static str,
    setup: fn(&mut Conn),
    command: &'static [&'static str],
}

fn run(c: &mut Conn, args: &[&str]) {
    let mut full = vec![args[0], P];
    full.extend_from_slice(&args[1..]);
    c.ok(&full);
}

fn sleep_ms(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}

/// Lane `a` at its ceiling of 1, `JOB-1` leased (token 1), `JOB-2` waiting:
/// the lane is off the ring until the lease ends.
fn at_ceiling(c: &mut Conn) {
    run(c, &["EMQ.ENQUEUE", "a", "JOB-1", "p1", "JOB-2", "p2"]);
    run(c, &["EMQ.LIMIT", "a", "1"]);
    run(c, &["EMQ.CLAIM", "60000"]);
}

/// As [`at_ceiling`], the lease expired (1 ms) a few ms ago.
fn expired_at_ceiling(c: &mut Conn) {
    run(c, &["EMQ.ENQUEUE", "a", "JOB-1", "p1", "JOB-2", "p2"]);
    run(c, &["EMQ.LIMIT", "a", "1"]);
    run(c, &["EMQ.CLAIM", "1"]);
    sleep_ms(10);
}

/// `JOB-1` of lane `a` leased once, then retried with `delay` and `max`.
fn retried(c: &mut Conn, delay: &str, max: &str) {
    run(c, &["EMQ.ENQUEUE", "a", "JOB-1", "p1"]);
    run(c, &["EMQ.CLAIM", "60000"]);
    run(c, &["EMQ.RETRY", "JOB-1", "1", delay, max, "boom"]);
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "enqueue into an empty lane",
            setup: |_| {},
            command: &["EMQ.ENQUEUE", "a", "JOB-1", "p1", "JOB-2", "p2"],
        },
        Case {
            name: "complete at the ceiling",
            setup: at_ceiling,
            command: &["EMQ.COMPLETE", "JOB-1", "1"],
        },
        Case {
            name: "retry at the ceiling",
            setup: at_ceiling,
            command: &["EMQ.RETRY", "JOB-1", "1", "1000", "5", "boom"],
        },
        Case {
            name: "retry to death at the ceiling",
            setup: at_ceiling,
            command: &["EMQ.RETRY", "JOB-1", "1", "0", "1", "boom"],
        },
        Case {
            name: "delay at the ceiling",
            setup: at_ceiling,
            command: &["EMQ.DELAY", "JOB-1", "1", "IN", "1000"],
        },
        Case {
            name: "extend",
            setup: at_ceiling,
            command: &["EMQ.EXTEND", "JOB-1", "1", "120000"],
        },
        Case {
            name: "limit raised",
            setup: at_ceiling,
            command: &["EMQ.LIMIT", "a", "2"],
        },
        Case {
            name: "limit removed",
            setup: at_ceiling,
            command: &["EMQ.LIMIT", "a", "NONE"],
        },
        Case {
            name: "weight",
            setup: at_ceiling,
            command: &["EMQ.WEIGHT", "a", "3"],
        },
        Case {
            name: "resume",
            setup: |c| {
                run(c, &["EMQ.ENQUEUE", "a", "JOB-1", "p1"]);
                run(c, &["EMQ.PAUSE", "a"]);
            },
            command: &["EMQ.RESUME", "a"],
        },
        Case {
            name: "resume before a timed pause ends",
            setup: |c| {
                run(c, &["EMQ.ENQUEUE", "a", "JOB-1", "p1"]);
                run(c, &["EMQ.PAUSE", "a", "FOR", "100000"]);
            },
            command: &["EMQ.RESUME", "a"],
        },
        Case {
            name: "pause",
            setup: |c| run(c, &["EMQ.ENQUEUE", "a", "JOB-1", "p1"]),
            command: &["EMQ.PAUSE", "a", "FOR", "1000"],
        },
        Case {
            name: "rate removed from a throttled lane",
            setup: |c| {
                run(c, &["EMQ.ENQUEUE", "a", "JOB-1", "p1", "JOB-2", "p2"]);
                run(c, &["EMQ.RATE", "a", "1", "100000", "BURST", "1"]);
                run(c, &["EMQ.CLAIM", "60000"]);
            },
            command: &["EMQ.RATE", "a", "NONE"],
        },
        Case {
            name: "reassign into an empty lane",
            setup: |c| run(c, &["EMQ.ENQUEUE", "a", "JOB-1", "p1"]),
            command: &["EMQ.REASSIGN", "JOB-1", "b"],
        },
        Case {
            name: "drain",
            setup: |c| run(c, &["EMQ.ENQUEUE", "a", "JOB-1", "p1", "JOB-2", "p2"]),
            command: &["EMQ.DRAIN", "a"],
        },
        Case {
            name: "reap",
            setup: expired_at_ceiling,
            command: &["EMQ.REAP"],
        },
        Case {
            name: "reap of a group",
            setup: expired_at_ceiling,
            command: &["EMQ.REAP", "GROUP", "a"],
        },
        Case {
            name: "reap of stalls",
            setup: expired_at_ceiling,
            command: &["EMQ.REAP", "MAXSTALLED", "1"],
        },
        Case {
            name: "a claim returning an expired lease first",
            setup: expired_at_ceiling,
            command: &["EMQ.WCLAIM", "60000"],
        },
        Case {
            name: "a claim bringing a timed pause back",
            setup: |c| {
                run(c, &["EMQ.ENQUEUE", "a", "JOB-1", "p1"]);
                run(c, &["EMQ.PAUSE", "a", "FOR", "1"]);
                sleep_ms(10);
            },
            command: &["EMQ.CLAIM", "60000"],
        },
        Case {
            name: "a claim meeting a stray of another lane",
            setup: |c| {
                run(c, &["EMQ.ENQUEUE", "a", "JOB-2", "p2"]);
                c.ok(&[
                    "HSET",
                    &format!("{P}job:JOB-1"),
                    "state",
                    "pending",
                    "attempts",
                    "0",
                    "group",
                    "b",
                ]);
                c.ok(&["ZADD", &format!("{P}g:a:pending"), "0", "JOB-1"]);
            },
            command: &["EMQ.BCLAIM", "60000"],
        },
        Case {
            name: "promote into an empty lane",
            setup: |c| {
                retried(c, "1", "5");
                sleep_ms(10);
            },
            command: &["EMQ.PROMOTE"],
        },
        Case {
            name: "revive into an empty lane",
            setup: |c| retried(c, "0", "1"),
            command: &["EMQ.REVIVE", "JOB-1"],
        },
        Case {
            name: "repair of a lane missing from the ring",
            setup: |c| {
                run(c, &["EMQ.ENQUEUE", "a", "JOB-1", "p1"]);
                c.ok(&["DEL", &format!("{P}ring")]);
            },
            command: &["EMQ.REPAIR", "a"],
        },
        Case {
            name: "queue pause",
            setup: |_| {},
            command: &["EMQ.QPAUSE"],
        },
        Case {
            name: "policy",
            setup: |_| {},
            command: &["EMQ.POLICY", "max-stalled", "3"],
        },
    ]
}

/// Runs `case` from an empty dataset, with `fault` applied after its setup,
/// as the user `who` (`None`: the default user); panics when the command
/// errs and the dataset changed.
fn check(s: &Server, c: &mut Conn, case: &Case, fault: &dyn Fn(&mut Conn), who: Option<&str>) -> bool {
    c.ok(&["FLUSHALL"]);
    (case.setup)(c);
    fault(c);
    let before = digest(c);
    let mut caller = match who {
        None => s.conn(),
        Some(user) => {
            let mut u = s.conn();
            u.ok(&["AUTH", user, "pw"]);
            u
        }
    };
    let mut args = vec![case.command[0], P];
    args.extend_from_slice(&case.command[1..]);
    let reply = caller.cmd(&args);
    if let (Err(e), Some(_)) = (&reply, who) {
        assert!(
            e.starts_with("NOPERM") && !e.contains(&format!("'{P}'")),
            "{}: {e}",
            case.name
        );
    }
    if let Err(e) = &reply {
        if digest(c) != before {
            // The one exception (docs/damage.md): a claim's returns before
            // its turn stay when the turn is refused for a row the user may
            // not touch; what they leave is sound.
            let exempt = case.command[0].ends_with("CLAIM") && e.contains(&format!("'{P}job:"));
            assert!(
                exempt,
                "{} ({args:?}) failed with {e:?} and changed the dataset",
                case.name
            );
            let snap = support::snapshot::snapshot(c, P);
            if let Err(broken) = support::invariants::check_invariants(&snap) {
                panic!("{}: a refused claim's returns left {broken}", case.name);
            }
        }
    }
    reply.is_err()
}

#[test]
fn each_case_writes_when_nothing_is_at_fault() {
    let s = Server::start();
    let mut c = s.conn();
    for case in cases() {
        c.ok(&["FLUSHALL"]);
        (case.setup)(&mut c);
        let before = digest(&mut c);
        let mut args = vec![case.command[0], P];
        args.extend_from_slice(&case.command[1..]);
        c.ok(&args);
        assert_ne!(digest(&mut c), before, "{}: the command wrote nothing", case.name);
    }
}

#[test]
fn a_key_of_another_type_refuses_the_command_whole() {
    let s = Server::start();
    let mut c = s.conn();
    let mut refused = 0;
    for case in cases() {
        for key in KEYS {
            let name = format!("{P}{key}");
            // A list where a hash or a set belongs, a hash where a list does.
            let fault = |c: &mut Conn| {
                c.ok(&["DEL", &name]);
                match *key {
                    "ring" | "wake" => c.ok(&["HSET", &name, "x", "1"]),
                    _ => c.ok(&["RPUSH", &name, "x"]),
                };
            };
            refused += usize::from(check(&s, &mut c, &case, &fault, None));
        }
    }
    // Most pairs fault a key the command touches.
    assert!(refused > 100, "only {refused} refusals: the faults missed");
}

#[test]
fn a_key_denied_to_the_caller_refuses_the_command_whole() {
    let s = Server::start();
    let mut c = s.conn();
    let mut refused = 0;
    // Each fixed key in turn, then the rows and the lanes' sets.
    let denied: Vec<String> = KEYS
        .iter()
        .map(|k| format!("{P}{k}"))
        .chain([format!("{P}job:*"), format!("{P}g:*")])
        .collect();
    for deny in &denied {
        let mut rule = vec!["ACL", "SETUSER", "w", "reset", "on", ">pw", "+@all"];
        // The prefix itself, the command's declared key, is always allowed:
        // the refusals counted are the module's.
        let allowed: Vec<String> = denied
            .iter()
            .filter(|k| *k != deny)
            .chain([&P.to_string()])
            .map(|k| format!("~{k}"))
            .collect();
        rule.extend(allowed.iter().map(String::as_str));
        for case in cases() {
            let fault = |c: &mut Conn| {
                c.ok(&rule);
            };
            refused += usize::from(check(&s, &mut c, &case, &fault, Some("w")));
        }
    }
    assert!(refused > 100, "only {refused} refusals: the denials missed");
}

#[test]
fn the_timer_meeting_a_bad_key_changes_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    run(&mut c, &["EMQ.ENQUEUE", "a", "JOB-1", "p1", "JOB-2", "p2"]);
    run(&mut c, &["EMQ.LIMIT", "a", "1"]);
    run(&mut c, &["EMQ.CLAIM", "200"]);
    c.ok(&["DEL", &format!("{P}wake")]);
    c.ok(&["HSET", &format!("{P}wake"), "x", "1"]);
    let before = digest(&mut c);
    // The lease runs out while a claim waits: the timer's return of it
    // would ring lane a, and `P wake` is a hash.
    let mut waiter = s.conn();
    let got = waiter.cmd(&["EMQ.WCLAIM", P, "60000", "BLOCK", "700"]);
    assert_eq!(got, Ok(support::Value::Nil), "the waiter is served nothing");
    assert_eq!(digest(&mut c), before, "the timer half-applied a return");
    // Mended, the next claim returns the lease and serves the lane.
    c.ok(&["DEL", &format!("{P}wake")]);
    let served = support::fixtures::served(&c.ok(&["EMQ.WCLAIM", P, "60000"]));
    assert_eq!(served.len(), 1, "{served:?}");
}
