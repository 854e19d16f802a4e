//! Operating a queue: EMQ.QUEUE's figures against a known keyspace,
//! EMQ.LANE, EMQ.LANES over a 100,000-lane queue with SCAN's guarantee, and
//! EMQ.REPAIR after each kind of outside damage — after which every
//! invariant holds again and the next claims serve every serviceable lane.

mod support;

use std::collections::BTreeSet;

use support::fixtures::{fill, hget, hset, now_ms, ring, served};
use support::invariants::check_invariants;
use support::replication::replicated_and_persisted;
use support::snapshot::snapshot;
use support::{Conn, Server, Value};

/// Sends `cmds` in one pipeline, every reply ignored but errors.
fn pipe(c: &mut Conn, cmds: &[Vec<String>]) {
    let raw: Vec<Vec<Vec<u8>>> = cmds
        .iter()
        .map(|v| v.iter().map(|a| a.as_bytes().to_vec()).collect())
        .collect();
    for r in c.pipeline(&raw).unwrap() {
        r.expect("a pipelined command");
    }
}

fn int(v: &Value, name: &str) -> i64 {
    v.field(name)
        .unwrap_or_else(|| panic!("no {name} in {}", v.render()))
        .int()
}

#[test]
fn queue_figures_match_a_known_keyspace() {
    let server = Server::start_with(&["--emq.reap-on-claim", "0"]);
    let mut c = server.conn();
    let p = "q{o}:";
    let empty = c.ok(&["EMQ.QUEUE", p]);
    for f in [
        "ringed",
        "paused",
        "queue_paused",
        "pending",
        "leased",
        "expired",
        "scheduled",
        "due",
        "dead",
        "completed",
        "failed",
    ] {
        assert_eq!(int(&empty, f), 0, "{f} of an empty queue");
    }
    for f in ["next_deadline", "next_due", "max_stalled"] {
        assert_eq!(empty.field(f), Some(&Value::Nil), "{f}");
    }
    for lane in ["a", "b", "c", "d"] {
        fill(&mut c, p, lane, 2);
    }
    c.ok(&["EMQ.PAUSE", p, "d"]);
    c.ok(&["EMQ.PAUSE", p, "nobody"]);
    c.ok(&["EMQ.POLICY", p, "max-stalled", "4"]);
    let long = served(&c.ok(&["EMQ.CLAIM", p, "600000"]))[0].clone();
    let done = served(&c.ok(&["EMQ.CLAIM", p, "600000"]))[0].clone();
    c.int(&["EMQ.COMPLETE", p, &done.0, "1"]);
    let dies = served(&c.ok(&["EMQ.CLAIM", p, "600000"]))[0].clone();
    c.ok(&["EMQ.RETRY", p, &dies.0, "1", "0", "1", "e"]);
    let later = served(&c.ok(&["EMQ.CLAIM", p, "600000"]))[0].clone();
    c.ok(&["EMQ.RETRY", p, &later.0, "1", "600000", "5", "e"]);
    c.ok(&["EMQ.CLAIM", p, "1"]);
    c.ok(&[
        "HSET",
        &format!("{p}job:JOBflat"),
        "state",
        "pending",
        "attempts",
        "0",
    ]);
    c.ok(&["ZADD", &format!("{p}pending"), "0", "JOBflat"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let q = c.ok(&["EMQ.QUEUE", p]);
    let now = now_ms(&mut c);
    assert_eq!(int(&q, "ringed"), c.int(&["LLEN", &format!("{p}ring")]));
    assert_eq!(int(&q, "paused"), 2);
    assert_eq!(int(&q, "pending"), 1);
    assert_eq!(int(&q, "leased"), 2);
    assert_eq!(int(&q, "expired"), 1);
    let first = support::fixtures::zscore(&mut c, &format!("{p}active"), &long.0).unwrap();
    assert!(
        int(&q, "next_deadline") < first,
        "the short lease is the earliest"
    );
    assert_eq!(int(&q, "scheduled"), 1);
    assert_eq!(int(&q, "due"), 0);
    assert!(int(&q, "next_due") > now);
    assert_eq!(int(&q, "dead"), 1);
    assert_eq!(int(&q, "max_stalled"), 4);
    assert_eq!((int(&q, "completed"), int(&q, "failed")), (1, 1));
    c.ok(&["EMQ.QPAUSE", p]);
    assert_eq!(int(&c.ok(&["EMQ.QUEUE", p]), "queue_paused"), 1);
    hset(&mut c, &format!("{p}meta"), "max-stalled", "lots");
    assert_eq!(
        c.ok(&["EMQ.QUEUE", p]).field("max_stalled").unwrap().text(),
        "lots",
        "shown as stored"
    );
}

#[test]
fn lane_shows_one_lane_and_is_a_map_in_resp3() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "l{o}:";
    fill(&mut c, p, "a", 3);
    c.ok(&["EMQ.WEIGHT", p, "a", "2"]);
    c.ok(&["EMQ.LIMIT", p, "a", "5"]);
    c.ok(&["EMQ.WCLAIM", p, "60000"]);
    let lane = c.ok(&["EMQ.LANE", p, "a"]);
    for (f, v) in [
        ("depth", 1),
        ("active", 2),
        ("weight", 2),
        ("limit", 5),
        ("paused", 0),
        ("ringed", 1),
    ] {
        assert_eq!(int(&lane, f), v, "{f}");
    }
    c.ok(&["HELLO", "3"]);
    assert!(matches!(c.ok(&["EMQ.LANE", p, "idle"]), Value::Map(_)));
    assert_eq!(c.ok(&["EMQ.LANE", p, "idle"]).field("limit"), Some(&Value::Nil));
}

/// Every lane `EMQ.LANES` returns, walking from cursor 0 to 0 in calls of
/// `COUNT count`.
fn all_lanes(c: &mut Conn, p: &str, count: usize) -> (Vec<String>, usize) {
    let mut cursor = "0".to_string();
    let mut lanes = Vec::new();
    let mut calls = 0;
    loop {
        let r = c.ok(&["EMQ.LANES", p, &cursor, "COUNT", &count.to_string()]);
        let batch = r.items()[1].texts();
        assert!(
            batch.len() <= 10 * count + 128,
            "one call returned {} lanes",
            batch.len()
        );
        lanes.extend(batch);
        calls += 1;
        cursor = r.items()[0].text();
        if cursor == "0" {
            return (lanes, calls);
        }
    }
}

#[test]
fn lanes_returns_every_lane_of_a_100000_lane_queue() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "big{o}:";
    const N: usize = 100_000;
    let mut expect = BTreeSet::new();
    for chunk in (0..N).collect::<Vec<_>>().chunks(5_000) {
        let cmds: Vec<Vec<String>> = chunk
            .iter()
            .map(|&i| {
                let lane = format!("L{i}");
                expect.insert(lane.clone());
                let s = |v: &[&str]| v.iter().map(|a| a.to_string()).collect::<Vec<_>>();
                match i % 50 {
                    0 => s(&["HSET", &format!("{p}gweight"), &lane, "3"]),
                    1 => s(&["HSET", &format!("{p}glimit"), &lane, "2"]),
                    2 => s(&["HSET", &format!("{p}gactive"), &lane, "1"]),
                    3 => s(&["SADD", &format!("{p}paused"), &lane]),
                    4 => s(&["EVAL", "redis.call('HSET', KEYS[1], 'state', 'active', 'group', ARGV[2]) return redis.call('ZADD', KEYS[2], 1, ARGV[1])", "2", &format!("{p}job:JOB{i}"), &format!("{p}active"), &format!("JOB{i}"), &lane]),
                    5 => s(&["RPUSH", &format!("{p}ring"), &lane]),
                    _ => s(&["EMQ.ENQUEUE", p, &lane, &format!("JOB{i}"), "x"]),
                }
            })
            .collect();
        pipe(&mut c, &cmds);
    }
    // Another queue's lanes, whose names begin like these, stay out.
    c.ok(&["EMQ.ENQUEUE", "big{o}:x", "other", "JOBo", "x"]);
    c.ok(&["EMQ.ENQUEUE", "big{o}", "other2", "JOBo2", "x"]);
    let (lanes, calls) = all_lanes(&mut c, p, 1_000);
    let got: BTreeSet<String> = lanes.iter().cloned().collect();
    let missing: Vec<&String> = expect.difference(&got).take(5).collect();
    assert!(missing.is_empty(), "lanes missing, e.g. {missing:?}");
    let extra: Vec<&String> = got.difference(&expect).take(5).collect();
    assert!(extra.is_empty(), "lanes of no such queue: {extra:?}");
    assert!(calls >= N / 1_000, "{calls} calls for {N} lanes");
    let (small, _) = all_lanes(&mut c, "big{o}:x", 10);
    assert_eq!(
        small.into_iter().collect::<BTreeSet<_>>(),
        BTreeSet::from(["other".to_string()])
    );
}

#[test]
fn lanes_keeps_scans_guarantee_while_the_queue_changes() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "ch{o}:";
    let cmds: Vec<Vec<String>> = (0..3_000)
        .flat_map(|i| {
            [
                vec![
                    "EMQ.ENQUEUE".into(),
                    p.into(),
                    format!("keep{i}"),
                    format!("JOBk{i}"),
                    "x".into(),
                ],
                vec![
                    "EMQ.ENQUEUE".into(),
                    p.into(),
                    format!("gone{i}"),
                    format!("JOBg{i}"),
                    "x".into(),
                ],
            ]
        })
        .collect();
    pipe(&mut c, &cmds);
    let mut cursor = "0".to_string();
    let mut got = BTreeSet::new();
    let mut i = 0;
    loop {
        let r = c.ok(&["EMQ.LANES", p, &cursor, "COUNT", "100"]);
        got.extend(r.items()[1].texts());
        for _ in 0..50 {
            c.ok(&["EMQ.DRAIN", p, &format!("gone{i}")]);
            c.ok(&["EMQ.ENQUEUE", p, &format!("new{i}"), &format!("JOBn{i}"), "x"]);
            i += 1;
        }
        cursor = r.items()[0].text();
        if cursor == "0" {
            break;
        }
    }
    for i in 0..3_000 {
        assert!(got.contains(&format!("keep{i}")), "keep{i} was there throughout");
    }
}

/// A queue in use: lanes with jobs, a weight, a ceiling, a pause, leases.
fn healthy(c: &mut Conn, p: &str) {
    for lane in ["a", "b", "c", "d", "e"] {
        fill(c, p, lane, 6);
    }
    c.ok(&["EMQ.WEIGHT", p, "a", "3"]);
    c.ok(&["EMQ.LIMIT", p, "b", "2"]);
    c.ok(&["EMQ.PAUSE", p, "e"]);
    for _ in 0..4 {
        c.ok(&["EMQ.WCLAIM", p, "600000"]);
    }
}

/// What `emq repair` does: every lane LANES returns, repaired in batches.
/// Returns how many changed.
fn repair_all(c: &mut Conn, p: &str) -> usize {
    let lanes: Vec<String> = all_lanes(c, p, 10)
        .0
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut changed = 0;
    for batch in lanes.chunks(3) {
        let n = batch.len().to_string();
        let mut args = vec!["EMQ.REPAIR", p, "LANES", &n];
        args.extend(batch.iter().map(String::as_str));
        let replies = c.ok(&args);
        assert_eq!(replies.items().len(), batch.len(), "one reply per lane");
        changed += replies.items().iter().filter(|r| int(r, "changed") == 1).count();
    }
    changed
}

#[test]
fn repair_mends_each_kind_of_outside_damage() {
    type Damage = fn(&mut Conn, &str);
    let damages: [(&str, Damage); 7] = [
        ("the ring deleted", |c, p| {
            drop(c.ok(&["DEL", &format!("{p}ring")]))
        }),
        ("a lane ringed twice", |c, p| {
            drop(c.ok(&["RPUSH", &format!("{p}ring"), "c"]))
        }),
        ("an unserviceable lane ringed", |c, p| {
            drop(c.ok(&["RPUSH", &format!("{p}ring"), "e"]))
        }),
        ("an active count too high", |c, p| {
            hset(c, &format!("{p}gactive"), "b", "2")
        }),
        ("an active count too low under a ceiling", |c, p| {
            c.ok(&["EMQ.LIMIT", p, "a", "3"]);
            hset(c, &format!("{p}gactive"), "a", "0");
        }),
        ("the active counts deleted", |c, p| {
            drop(c.ok(&["DEL", &format!("{p}gactive")]))
        }),
        ("an active count that is no number", |c, p| {
            hset(c, &format!("{p}gactive"), "a", "x")
        }),
    ];
    for (what, damage) in damages {
        let server = Server::start();
        let mut c = server.conn();
        let p = "r{o}:";
        healthy(&mut c, p);
        check_invariants(&snapshot(&mut c, p)).unwrap_or_else(|e| panic!("healthy: {e}"));
        damage(&mut c, p);
        assert!(
            check_invariants(&snapshot(&mut c, p)).is_err(),
            "{what}: damage seen"
        );
        let dry = c.ok(&["EMQ.REPAIR", p, "LANES", "5", "a", "b", "c", "d", "e", "DRYRUN"]);
        assert!(
            dry.items().iter().any(|r| int(r, "changed") == 1),
            "{what}: a dry run says what would change"
        );
        assert!(
            check_invariants(&snapshot(&mut c, p)).is_err(),
            "{what}: a dry run changes nothing"
        );
        assert!(repair_all(&mut c, p) > 0, "{what}: repaired something");
        check_invariants(&snapshot(&mut c, p)).unwrap_or_else(|e| panic!("{what}: after repair: {e}"));
        assert_eq!(
            repair_all(&mut c, p),
            0,
            "{what}: a second repair changes nothing"
        );
        let mut lanes = BTreeSet::new();
        for _ in 0..12 {
            for j in served(&c.ok(&["EMQ.WCLAIM", p, "600000"])) {
                lanes.insert(j.3);
            }
        }
        assert!(
            lanes.contains("c") && lanes.contains("d"),
            "{what}: every lane serves again: {lanes:?}"
        );
    }
}

#[test]
fn repair_names_damage_it_cannot_judge_and_repairs_the_rest() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "n{o}:";
    healthy(&mut c, p);
    hset(&mut c, &format!("{p}glimit"), "b", "abc");
    hset(&mut c, &format!("{p}gactive"), "c", "9");
    let replies = c.ok(&["EMQ.REPAIR", p, "LANES", "2", "b", "c"]);
    let (b, cc) = (&replies.items()[0], &replies.items()[1]);
    assert!(
        b.field("damaged").unwrap().text().contains("limit of lane 'b'"),
        "{}",
        b.render()
    );
    assert_eq!(cc.field("damaged"), Some(&Value::Nil));
    assert_eq!(
        hget(&mut c, &format!("{p}gactive"), "c").as_deref(),
        Some("1"),
        "c's count mended to its one lease"
    );
    c.ok(&["EMQ.LIMIT", p, "b", "2"]);
    check_invariants(&snapshot(&mut c, p)).unwrap();
}

#[test]
fn repair_replicates_and_persists_as_its_effects() {
    replicated_and_persisted(&[], false, |_, c| {
        let p = "rp{o}:";
        healthy(c, p);
        c.ok(&["DEL", &format!("{p}ring")]);
        hset(c, &format!("{p}gactive"), "b", "7");
        assert!(repair_all(c, p) > 0);
        assert_eq!(ring(c, p), ["a", "b", "c", "d"]);
    });
}
