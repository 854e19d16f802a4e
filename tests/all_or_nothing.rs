//! An error means nothing changed, whichever key is at fault: every command,
//! each in a state where it writes (a lane that joins the ring, a lease that
//! ends, a job that comes back, a stray that moves), run once with each of
//! the queue's keys holding another type and once with each denied to the
//! caller. It either succeeds or leaves the dataset as it was: no command
//! may find a bad key after its first write (docs/damage.md).

mod support;

use std::time::Duration;

use support::invariants::check_invariants;
use support::replication::digest;
use support::snapshot::{diff, snapshot, Snapshot};
use support::{Conn, Server, Value};

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
    "gcredit",
    "gcost",
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
            name: "flat enqueue",
            setup: |_| {},
            command: &["EMQ.QENQUEUE", "JOB-1", "p1", "JOB-2", "p2"],
        },
        Case {
            name: "flat schedule",
            setup: |_| {},
            command: &["EMQ.QSCHEDULE", "JOB-1", "p1", "IN", "1000"],
        },
        Case {
            name: "flat claim",
            setup: |c| run(c, &["EMQ.QENQUEUE", "JOB-1", "p1"]),
            command: &["EMQ.QCLAIM", "60000"],
        },
        Case {
            name: "flat batch claim",
            setup: |c| run(c, &["EMQ.QENQUEUE", "JOB-1", "p1", "JOB-2", "p2"]),
            command: &["EMQ.QBCLAIM", "60000", "2"],
        },
        Case {
            name: "extend many",
            setup: |c| {
                run(c, &["EMQ.QENQUEUE", "JOB-1", "p1", "JOB-2", "p2"]);
                run(c, &["EMQ.QBCLAIM", "60000", "2"]);
            },
            command: &["EMQ.MEXTEND", "120000", "JOB-1", "1", "JOB-2", "1"],
        },
        Case {
            name: "set data",
            setup: |c| run(c, &["EMQ.QENQUEUE", "JOB-1", "p1"]),
            command: &["EMQ.SETDATA", "JOB-1", "new"],
        },
        Case {
            name: "progress",
            setup: |c| run(c, &["EMQ.QENQUEUE", "JOB-1", "p1"]),
            command: &["EMQ.PROGRESS", "JOB-1", "50"],
        },
        Case {
            name: "log, trimmed",
            setup: |c| {
                run(c, &["EMQ.QENQUEUE", "JOB-1", "p1"]);
                run(c, &["EMQ.LOG", "JOB-1", "one"]);
            },
            command: &["EMQ.LOG", "JOB-1", "two", "KEEP", "1"],
        },
        Case {
            name: "remove of a leased lane job at its ceiling",
            setup: at_ceiling,
            command: &["EMQ.REMOVE", "JOB-1"],
        },
        Case {
            name: "remove of a waiting lane job",
            setup: |c| run(c, &["EMQ.ENQUEUE", "a", "JOB-1", "p1"]),
            command: &["EMQ.REMOVE", "JOB-1"],
        },
        Case {
            name: "reprocess into an empty lane",
            setup: |c| retried(c, "0", "1"),
            command: &["EMQ.REPROCESS", "JOB-1"],
        },
        Case {
            name: "flat drain",
            setup: |c| {
                run(c, &["EMQ.QENQUEUE", "JOB-1", "p1"]);
                run(c, &["EMQ.QSCHEDULE", "JOB-2", "p2", "IN", "100000"]);
            },
            command: &["EMQ.QDRAIN", "SCHEDULE"],
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
        Case {
            name: "fairness policy",
            setup: |_| {},
            command: &["EMQ.POLICY", "fairness", "time", "QUANTUM", "20"],
        },
        Case {
            name: "a claim under fairness by time passing a lane in debt",
            setup: |c| {
                run(c, &["EMQ.POLICY", "fairness", "time"]);
                run(c, &["EMQ.ENQUEUE", "a", "JOB-1", "p1"]);
                run(c, &["EMQ.ENQUEUE", "b", "JOB-2", "p2"]);
                c.ok(&["HSET", &format!("{P}gcredit"), "a", "-1000000"]);
            },
            command: &["EMQ.WCLAIM", "60000"],
        },
        Case {
            name: "complete under fairness by time",
            setup: |c| {
                run(c, &["EMQ.POLICY", "fairness", "time"]);
                run(c, &["EMQ.ENQUEUE", "a", "JOB-1", "p1"]);
                run(c, &["EMQ.WCLAIM", "60000"]);
            },
            command: &["EMQ.COMPLETE", "JOB-1", "1"],
        },
        Case {
            name: "reap under fairness by time",
            setup: |c| {
                run(c, &["EMQ.POLICY", "fairness", "time"]);
                run(c, &["EMQ.ENQUEUE", "a", "JOB-1", "p1"]);
                run(c, &["EMQ.WCLAIM", "1"]);
                sleep_ms(10);
            },
            command: &["EMQ.REAP"],
        },
    ]
}

/// The keys the cases touch beyond the fixed ones: the rows and logs of
/// `JOB-1` and `JOB-2`, and the lanes' sets.
const MORE: &[&str] = &[
    "job:JOB-1",
    "job:JOB-2",
    "job:JOB-1:logs",
    "job:JOB-2:logs",
    "job:JOB-1:lock",
    "job:JOB-2:lock",
    "g:a:pending",
    "g:b:pending",
];

/// The command of `case`, its prefix in place.
fn command(case: &Case) -> Vec<&'static str> {
    let mut args = vec![case.command[0], P];
    args.extend_from_slice(&case.command[1..]);
    args
}

/// Runs `case` from an empty dataset, with `fault` applied after its setup,
/// as the user `who` (`None`: the default user). Panics when the command
/// errs and the dataset changed; returns the reply and what it left.
fn check(
    s: &Server,
    c: &mut Conn,
    case: &Case,
    fault: &dyn Fn(&mut Conn),
    who: Option<&str>,
) -> (Result<Value, String>, Snapshot) {
    c.ok(&["FLUSHALL"]);
    (case.setup)(c);
    fault(c);
    let before = digest(c);
    let mut caller = s.conn();
    if let Some(user) = who {
        caller.ok(&["AUTH", user, "pw"]);
    }
    let args = command(case);
    let reply = caller.cmd(&args);
    if let Err(e) = &reply {
        if digest(c) != before {
            // The one exception (docs/damage.md): a claim's returns before
            // its turn stay when the turn is refused for a row or a lane's
            // set the user may not touch; what they leave is sound.
            let exempt = who.is_some()
                && case.command[0].ends_with("CLAIM")
                && (e.contains(&format!("'{P}job:")) || e.contains(&format!("'{P}g:")));
            assert!(
                exempt,
                "{} ({args:?}) failed with {e:?} and changed the dataset",
                case.name
            );
            if let Err(broken) = check_invariants(&snapshot(c, P)) {
                panic!("{}: a refused claim's returns left {broken}", case.name);
            }
        }
    }
    (reply, snapshot(c, P))
}

/// The reads (SPEC section 9): each refused by some key of another type
/// and by some key denied, changing nothing either way.
fn read_cases() -> Vec<Case> {
    let with_jobs = |c: &mut Conn| {
        run(c, &["EMQ.ENQUEUE", "a", "JOB-1", "p1"]);
        run(c, &["EMQ.QENQUEUE", "JOB-2", "p2"]);
        c.ok(&["HSET", &format!("{P}meta"), "concurrency", "5", "max", "3"]);
    };
    vec![
        Case {
            name: "counts",
            setup: with_jobs,
            command: &[
                "EMQ.COUNTS",
                "pending",
                "active",
                "schedule",
                "dead",
                "METRICS",
                "completed",
                "failed",
            ],
        },
        Case {
            name: "state",
            setup: with_jobs,
            command: &["EMQ.STATE", "JOB-1"],
        },
        Case {
            name: "depths",
            setup: with_jobs,
            command: &["EMQ.DEPTHS", "a", "b"],
        },
        Case {
            name: "maxed",
            setup: with_jobs,
            command: &["EMQ.MAXED"],
        },
        Case {
            name: "rate ttl",
            setup: with_jobs,
            command: &["EMQ.RATETTL", "0"],
        },
    ]
}

#[test]
fn a_read_meets_a_bad_or_denied_key_with_an_error_and_changes_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    let keys: Vec<&str> = KEYS.iter().chain(MORE).copied().chain(["limiter"]).collect();
    for case in read_cases() {
        let (mut wrong, mut denied) = (0, 0);
        for key in &keys {
            let name = format!("{P}{key}");
            let fault = |c: &mut Conn| {
                c.ok(&["DEL", &name]);
                c.ok(&["SADD", &name, "x"]);
            };
            wrong += usize::from(check(&s, &mut c, &case, &fault, None).0.is_err());
        }
        for deny in &keys {
            allow_all_but(&mut c, deny);
            c.ok(&["ACL", "SETUSER", "w", &format!("~{P}limiter")]);
            if *deny == "limiter" {
                c.ok(&["ACL", "SETUSER", "w", "resetkeys", &format!("~{P}")]);
                let mut rule = vec!["ACL".to_string(), "SETUSER".into(), "w".into()];
                rule.extend(KEYS.iter().chain(MORE).map(|k| format!("~{P}{k}")));
                c.ok(&rule.iter().map(String::as_str).collect::<Vec<_>>());
            }
            if let (Err(e), _) = check(&s, &mut c, &case, &|_| {}, Some("w")) {
                assert!(
                    e.starts_with("NOPERM") && e.contains(&format!("'{P}{deny}'")),
                    "{}: {e}",
                    case.name
                );
                denied += 1;
            }
        }
        assert!(
            wrong > 0 && denied > 0,
            "{}: {wrong} wrong types, {denied} denials refused it",
            case.name
        );
    }
}

#[test]
fn each_case_writes_when_nothing_is_at_fault() {
    let s = Server::start();
    let mut c = s.conn();
    for case in cases() {
        c.ok(&["FLUSHALL"]);
        (case.setup)(&mut c);
        let before = digest(&mut c);
        c.ok(&command(&case));
        assert_ne!(digest(&mut c), before, "{}: the command wrote nothing", case.name);
    }
}

#[test]
fn a_key_of_another_type_refuses_the_command_whole() {
    let s = Server::start();
    let mut c = s.conn();
    for case in cases() {
        let mut refused = 0;
        for key in KEYS.iter().chain(MORE) {
            let name = format!("{P}{key}");
            // A list where a hash, a set or a zset belongs; a hash where a
            // list does.
            let fault = |c: &mut Conn| {
                c.ok(&["DEL", &name]);
                match *key {
                    "ring" | "wake" => c.ok(&["HSET", &name, "x", "1"]),
                    k if k.ends_with(":logs") => c.ok(&["HSET", &name, "x", "1"]),
                    _ => c.ok(&["RPUSH", &name, "x"]),
                };
            };
            refused += usize::from(check(&s, &mut c, &case, &fault, None).0.is_err());
        }
        // Every command touches a key whose type it checks.
        assert!(refused > 0, "{}: no fault refused it", case.name);
    }
}

/// `ACL SETUSER w`: every key the cases touch but `deny`, and the prefix
/// itself (the command's declared key, so that the refusals are the
/// module's).
fn allow_all_but(c: &mut Conn, deny: &str) {
    let mut rule: Vec<String> = ["ACL", "SETUSER", "w", "reset", "on", ">pw", "+@all", "&*"]
        .map(String::from)
        .to_vec();
    rule.push(format!("~{P}"));
    rule.extend(
        KEYS.iter()
            .chain(MORE)
            .filter(|k| **k != deny)
            .map(|k| format!("~{P}{k}")),
    );
    let refs: Vec<&str> = rule.iter().map(String::as_str).collect();
    c.ok(&refs);
}

#[test]
fn a_key_denied_to_the_caller_refuses_the_command_whole() {
    let s = Server::start();
    let mut c = s.conn();
    for case in cases() {
        // What the command leaves when it may touch everything.
        allow_all_but(&mut c, "");
        let (reply, expected) = check(&s, &mut c, &case, &|_| {}, Some("w"));
        assert!(reply.is_ok(), "{}: {reply:?}", case.name);
        let mut refused = 0;
        for deny in KEYS.iter().chain(MORE) {
            allow_all_but(&mut c, deny);
            let (reply, left) = check(&s, &mut c, &case, &|_| {}, Some("w"));
            match reply {
                Err(e) => {
                    let named = format!("'{P}{deny}'");
                    assert!(
                        e.starts_with("NOPERM") && e.contains(&named),
                        "{}: {e}",
                        case.name
                    );
                    refused += 1;
                }
                // Served without the denied key: then it did not need it,
                // and did what it does with every key allowed.
                Ok(_) => {
                    if let Some(d) = diff(&expected, &left, 2000.0) {
                        panic!(
                            "{}: with {deny} denied it succeeded and did otherwise: {d}",
                            case.name
                        );
                    }
                }
            }
        }
        assert!(refused > 0, "{}: no denial refused it", case.name);
    }
}

#[test]
fn the_timer_meeting_a_bad_key_changes_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    let lease = (500 * support::server::slow()).to_string();
    let block = (1200 * support::server::slow()).to_string();
    // The lease runs out while a claim waits: the timer returns it, which
    // rings lane a, and the waiter is served JOB-2.
    let wait = |c: &mut Conn, bad_wake: bool| {
        c.ok(&["FLUSHALL"]);
        run(c, &["EMQ.ENQUEUE", "a", "JOB-1", "p1", "JOB-2", "p2"]);
        run(c, &["EMQ.LIMIT", "a", "1"]);
        run(c, &["EMQ.CLAIM", &lease]);
        if bad_wake {
            c.ok(&["DEL", &format!("{P}wake")]);
            c.ok(&["HSET", &format!("{P}wake"), "x", "1"]);
        }
        let before = digest(c);
        let got = s.conn().cmd(&["EMQ.WCLAIM", P, "60000", "BLOCK", &block]);
        (got, before)
    };
    let (got, _) = wait(&mut c, false);
    let served = support::fixtures::served(&got.expect("served"));
    assert_eq!(
        served.len(),
        1,
        "the timer returned the lease to the waiter: {served:?}"
    );
    // `P wake` a hash: the timer's return would fail on its ring push, so it
    // returns nothing and the waiter times out.
    let (got, before) = wait(&mut c, true);
    assert_eq!(got, Ok(Value::Nil), "the waiter is served nothing");
    assert_eq!(digest(&mut c), before, "the timer half-applied a return");
    // Mended, the next claim returns the lease and serves the lane.
    c.ok(&["DEL", &format!("{P}wake")]);
    let served = support::fixtures::served(&c.ok(&["EMQ.WCLAIM", P, "60000"]));
    assert_eq!(served.len(), 1, "{served:?}");
}

/// A claim's returns come in two steps (expired leases, then lanes back from
/// `P gnext`): the first to be refused is refused before either writes.
#[test]
fn a_claims_returns_are_refused_before_either_writes() {
    let s = Server::start();
    let mut c = s.conn();
    run(&mut c, &["EMQ.ENQUEUE", "b", "JOB-1", "p1"]);
    run(&mut c, &["EMQ.POLICY", "max-stalled", "1"]);
    run(&mut c, &["EMQ.CLAIM", "1"]);
    run(&mut c, &["EMQ.ENQUEUE", "a", "JOB-2", "p2"]);
    run(&mut c, &["EMQ.PAUSE", "a", "FOR", "1"]);
    // JOB-1 dies of its stall when returned, and the failed count is full.
    c.ok(&[
        "HSET",
        &format!("{P}metrics:failed"),
        "count",
        "9223372036854775807",
    ]);
    sleep_ms(10);
    let before = digest(&mut c);
    let got = c.cmd(&["EMQ.CLAIM", P, "60000"]);
    assert_eq!(
        got,
        Err(format!("ERR count 'count' in '{P}metrics:failed' would overflow"))
    );
    assert_eq!(digest(&mut c), before, "lane a came back before the refusal");
}
