//! Operating a queue (issue 16): EMQ.QUEUE's figures against a known
//! keyspace, EMQ.LANES over a 100,000-lane queue, and EMQ.REPAIR after each
//! kind of outside damage — after which every invariant the property tests
//! check holds again and the next claims serve every serviceable lane.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::invariants::check_invariants;
use common::*;

/// A flat RESP2 field/value reply as a map.
fn fields(r: &Reply) -> BTreeMap<String, Value> {
    let Value::Array(items) = r.value() else {
        panic!("expected a field/value array, got {r:?}")
    };
    items.chunks(2).map(|kv| (text(&kv[0]), kv[1].clone())).collect()
}

fn now_ms(c: &mut redis::Connection) -> i64 {
    let (s, us): (i64, i64) = redis::cmd("TIME").query(c).unwrap();
    s * 1000 + us / 1000
}

#[test]
fn queue_figures_match_a_known_keyspace() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "q{o}:";
    let empty = fields(&cmd(&mut c, &["EMQ.QUEUE", p]));
    for f in ["ringed", "paused", "leased", "expired", "dead"] {
        assert_eq!(empty[f], Value::Int(0), "{f} of an empty queue");
    }
    assert_eq!(empty["next_deadline"], Value::Nil);
    assert_eq!(empty["max_deliveries"], Value::Nil);

    enqueue_two(&mut c, p, &["a", "b", "c", "d"]);
    cmd(&mut c, &["EMQ.PAUSE", p, "d"]);
    cmd(&mut c, &["EMQ.PAUSE", p, "nobody"]);
    cmd(&mut c, &["EMQ.POLICY", p, "max-deliveries", "1"]);
    // Two long leases, one that dies on its NACK (max-deliveries 1), then
    // one short lease left to expire (no claim after it to reap it).
    let (_, long, _) = cmd(&mut c, &["EMQ.CLAIM", p, "600000"]).claim().unwrap();
    cmd(&mut c, &["EMQ.CLAIM", p, "600000"]).claim().unwrap();
    let (_, t, jobs) = cmd(&mut c, &["EMQ.CLAIM", p, "600000"]).claim().unwrap();
    cmd(&mut c, &["EMQ.NACK", p, &t.to_string(), &jobs[0]]);
    cmd(&mut c, &["EMQ.CLAIM", p, "1"]).claim().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));

    let q = fields(&cmd(&mut c, &["EMQ.QUEUE", p]));
    let now = now_ms(&mut c);
    let leases = format!("{p}leases");
    assert_eq!(
        q["ringed"],
        Value::Int(int_reply(&mut c, &["LLEN", &format!("{p}gring")]))
    );
    assert_eq!(q["paused"], Value::Int(2));
    assert_eq!(q["leased"], Value::Int(3));
    assert_eq!(q["leased"], Value::Int(int_reply(&mut c, &["ZCARD", &leases])));
    assert_eq!(q["expired"], Value::Int(1));
    assert_eq!(
        q["expired"],
        Value::Int(int_reply(&mut c, &["ZCOUNT", &leases, "-inf", &now.to_string()]))
    );
    let first: Vec<(String, i64)> = redis::cmd("ZRANGE")
        .arg(&leases)
        .arg(0)
        .arg(0)
        .arg("WITHSCORES")
        .query(&mut c)
        .unwrap();
    assert_eq!(q["next_deadline"], Value::Int(first[0].1));
    assert!(first[0].1 < long, "the short lease is the earliest");
    assert_eq!(q["dead"], Value::Int(1));
    assert_eq!(q["max_deliveries"], Value::Int(1));
    // Read-only: a replica serves it, and it changed nothing.
    let info = command_flags(&mut c, "emq.queue");
    assert!(info.contains("readonly"), "{info:?}");
    assert_eq!(fields(&cmd(&mut c, &["EMQ.QUEUE", p])), q);
}

fn command_flags(c: &mut redis::Connection, name: &str) -> BTreeSet<String> {
    let Value::Array(outer) = cmd(c, &["COMMAND", "INFO", name]).value().clone() else {
        panic!()
    };
    let Value::Array(info) = &outer[0] else { panic!() };
    let Value::Array(flags) = &info[2] else { panic!() };
    flags.iter().map(text).collect()
}

/// Every lane `EMQ.LANES` returns, walking from cursor 0 to 0 in calls of
/// `COUNT count`; each call's reply is checked to be bounded.
fn all_lanes(c: &mut redis::Connection, p: &str, count: usize) -> (Vec<String>, usize) {
    let mut cursor = "0".to_string();
    let mut lanes = Vec::new();
    let mut calls = 0;
    loop {
        let r = cmd(c, &["EMQ.LANES", p, &cursor, "COUNT", &count.to_string()]);
        let Value::Array(parts) = r.value() else {
            panic!("{r:?}")
        };
        let Value::Array(batch) = &parts[1] else {
            panic!("{r:?}")
        };
        // SCAN's own bound: a step returns what about COUNT buckets or
        // elements hold (small encodings return whole, but are small).
        assert!(
            batch.len() <= 10 * count + 128,
            "one call returned {} lanes",
            batch.len()
        );
        lanes.extend(batch.iter().map(text));
        calls += 1;
        cursor = text(&parts[0]);
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
    // Lanes named in each place a lane can be named: pending jobs (most),
    // and some only by a weight, a ceiling, an active count, a pause, a
    // lease record, the ring.
    let mut expect = BTreeSet::new();
    for chunk in (0..N).collect::<Vec<_>>().chunks(5_000) {
        let mut pipe = redis::pipe();
        for &i in chunk {
            let lane = format!("L{i}");
            match i % 50 {
                0 => pipe.cmd("HSET").arg(format!("{p}gweight")).arg(&lane).arg(3),
                1 => pipe.cmd("HSET").arg(format!("{p}glimit")).arg(&lane).arg(2),
                2 => pipe.cmd("HSET").arg(format!("{p}gactive")).arg(&lane).arg(1),
                3 => pipe.cmd("SADD").arg(format!("{p}gpaused")).arg(&lane),
                4 => pipe
                    .cmd("HSET")
                    .arg(format!("{p}jlease"))
                    .arg(format!("j{i}"))
                    .arg(format!("99 {lane}")),
                5 => pipe.cmd("RPUSH").arg(format!("{p}gring")).arg(&lane),
                _ => pipe
                    .cmd("EMQ.ENQUEUE")
                    .arg(p)
                    .arg(&lane)
                    .arg(1)
                    .arg(format!("j{i}")),
            }
            .ignore();
            expect.insert(lane);
        }
        pipe.query::<()>(&mut c).unwrap();
    }
    // Another queue's lanes, whose names begin like these, stay out.
    cmd(&mut c, &["EMQ.ENQUEUE", "big{o}:x", "other", "1", "j"]);
    cmd(&mut c, &["EMQ.ENQUEUE", "big{o}", "other2", "1", "j"]);

    let (lanes, calls) = all_lanes(&mut c, p, 1_000);
    let got: BTreeSet<String> = lanes.iter().cloned().collect();
    let missing: Vec<&String> = expect.difference(&got).take(5).collect();
    assert!(
        missing.is_empty(),
        "{} lanes missing, e.g. {missing:?}",
        expect.len() - got.len().min(expect.len())
    );
    let extra: Vec<&String> = got.difference(&expect).take(5).collect();
    assert!(extra.is_empty(), "lanes of no such queue: {extra:?}");
    // Bounded calls: the walk took many of them, not one.
    assert!(calls >= N / 1_000, "{calls} calls for {N} lanes");
    assert!(lanes.len() < 3 * N, "{} lanes returned for {N}", lanes.len());

    // The default COUNT (10) walks a small queue completely too.
    let (small, _) = all_lanes(&mut c, "big{o}:x", 10);
    assert_eq!(
        small.into_iter().collect::<BTreeSet<_>>(),
        BTreeSet::from(["other".to_string()])
    );
}

#[test]
fn lanes_counts_the_keys_it_walks_not_only_the_lanes_it_finds() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "few{o}:";
    // A small queue in a large keyspace: the walk of the keyspace for its
    // pending keys must be paid for in calls, not done in one.
    const OTHER: usize = 20_000;
    for chunk in (0..OTHER).collect::<Vec<_>>().chunks(5_000) {
        let mut pipe = redis::pipe();
        for &i in chunk {
            pipe.cmd("SET").arg(format!("unrelated:{i}")).arg(1).ignore();
        }
        pipe.query::<()>(&mut c).unwrap();
    }
    for lane in ["a", "b", "c"] {
        cmd(&mut c, &["EMQ.ENQUEUE", p, lane, "1", &format!("j{lane}")]);
    }
    let (lanes, calls) = all_lanes(&mut c, p, 100);
    assert_eq!(
        lanes.into_iter().collect::<BTreeSet<_>>(),
        BTreeSet::from(["a", "b", "c"].map(String::from))
    );
    // About COUNT keys per call: tens of calls for 20,000 keys, not one.
    assert!(calls >= OTHER / 100 / 4, "{calls} calls for {OTHER} keys");
}

#[test]
fn lanes_keeps_scans_guarantee_while_the_queue_changes() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "ch{o}:";
    let mut pipe = redis::pipe();
    for i in 0..3_000 {
        pipe.cmd("EMQ.ENQUEUE")
            .arg(p)
            .arg(format!("keep{i}"))
            .arg(1)
            .arg(format!("k{i}"))
            .ignore();
        pipe.cmd("EMQ.ENQUEUE")
            .arg(p)
            .arg(format!("gone{i}"))
            .arg(1)
            .arg(format!("g{i}"))
            .ignore();
    }
    pipe.query::<()>(&mut c).unwrap();
    let mut cursor = "0".to_string();
    let mut got = BTreeSet::new();
    let mut i = 0;
    loop {
        let r = cmd(&mut c, &["EMQ.LANES", p, &cursor, "COUNT", "100"]);
        let Value::Array(parts) = r.value() else { panic!() };
        let Value::Array(batch) = &parts[1] else { panic!() };
        got.extend(batch.iter().map(text));
        // Between calls lanes come and go (and the keyspace rehashes).
        for _ in 0..50 {
            let gone = format!("{p}g:gone{i}:pending");
            let _: () = redis::cmd("DEL").arg(&gone).query(&mut c).unwrap();
            cmd(
                &mut c,
                &["EMQ.ENQUEUE", p, &format!("new{i}"), "1", &format!("n{i}")],
            );
            i += 1;
        }
        cursor = text(&parts[0]);
        if cursor == "0" {
            break;
        }
    }
    for i in 0..3_000 {
        assert!(got.contains(&format!("keep{i}")), "keep{i} was there throughout");
    }
}

#[test]
fn lanes_refuses_a_bad_cursor_or_count() {
    let server = Server::start();
    let mut c = server.conn();
    for (args, want) in [
        (vec!["q:", "x"], "cursor"),
        (vec!["q:", "-1"], "cursor"),
        (vec!["q:", "7"], "cursor"),
        (vec!["q:", "0", "COUNT", "0"], "COUNT"),
        (vec!["q:", "0", "COUNT"], ""),
        (vec!["q:", "0", "LIMIT", "3"], ""),
    ] {
        let mut argv = vec!["EMQ.LANES"];
        argv.extend(&args);
        let r = cmd(&mut c, &argv);
        let e = r.err().unwrap_or_else(|| panic!("{args:?} accepted: {r:?}"));
        assert!(e.starts_with("ERR") && e.contains(want), "{args:?}: {e}");
    }
    let _: () = redis::cmd("SET").arg("w:gweight").arg("x").query(&mut c).unwrap();
    let r = cmd(&mut c, &["EMQ.LANES", "w:", "0", "COUNT", "100"]);
    assert!(r.err().is_some_and(|e| e.starts_with("WRONGTYPE")), "{r:?}");
}

/// A queue in use: lanes with jobs, weights, a ceiling, a pause, leases.
/// Returns every job id it holds.
fn healthy(c: &mut redis::Connection, p: &str) -> BTreeSet<String> {
    let mut alive = BTreeSet::new();
    for lane in ["a", "b", "c", "d", "e"] {
        let mut args = vec!["EMQ.ENQUEUE".to_string(), p.into(), lane.into()];
        for i in 0..6 {
            args.extend([i.to_string(), format!("{lane}{i}")]);
            alive.insert(format!("{lane}{i}"));
        }
        cmd(c, &args.iter().map(String::as_str).collect::<Vec<_>>());
    }
    cmd(c, &["EMQ.WEIGHT", p, "a", "3"]);
    cmd(c, &["EMQ.LIMIT", p, "b", "2"]);
    cmd(c, &["EMQ.PAUSE", p, "e"]);
    for _ in 0..4 {
        cmd(c, &["EMQ.WCLAIM", p, "600000"]).claim().expect("a claim");
    }
    alive
}

fn check(c: &mut redis::Connection, p: &str, alive: &BTreeSet<String>) -> Result<(), String> {
    check_invariants(&snapshot(c, p), alive, &BTreeSet::new())
}

/// What `emq repair` does: every lane LANES returns, repaired in batches
/// (`EMQ.REPAIR P LANES n lane…`). Returns how many changed.
fn repair_all(c: &mut redis::Connection, p: &str) -> usize {
    // A lane may be returned more than once, as SCAN returns a key.
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
        let r = cmd(c, &args);
        let Value::Array(replies) = r.value() else {
            panic!("{r:?}")
        };
        assert_eq!(replies.len(), batch.len(), "one reply per lane");
        for one in replies {
            let Value::Array(flat) = one else { panic!("{r:?}") };
            let fields: BTreeMap<String, Value> =
                flat.chunks(2).map(|kv| (text(&kv[0]), kv[1].clone())).collect();
            if fields["changed"] == Value::Int(1) {
                changed += 1;
            }
        }
    }
    changed
}

/// Claims (and acks) until nothing is served; returns the lanes served.
fn drain(c: &mut redis::Connection, p: &str) -> BTreeSet<String> {
    let mut served = BTreeSet::new();
    while let Some((lane, token, jobs)) = cmd(c, &["EMQ.WCLAIM", p, "600000"]).claim() {
        served.insert(lane);
        let mut ack = vec!["EMQ.ACK".to_string(), p.into(), token.to_string()];
        ack.extend(jobs);
        cmd(c, &ack.iter().map(String::as_str).collect::<Vec<_>>());
    }
    served
}

/// The lane of the first lease record (a lane with a lease).
fn leased_lane(c: &mut redis::Connection, p: &str) -> String {
    let recs: BTreeMap<String, String> = redis::cmd("HGETALL").arg(format!("{p}jlease")).query(c).unwrap();
    let rec = recs.values().next().expect("a lease");
    rec.split_once(' ').unwrap().1.to_string()
}

type Damage = fn(&mut redis::Connection, &str);

/// Every kind of damage the tests below repair one by one.
const DAMAGES: &[Damage] = &[
    ring_deleted,
    ring_duplicates,
    ring_unserviceable,
    active_too_high,
    active_negative,
    active_too_low_under_a_ceiling,
    active_missing,
    active_not_a_number,
    orphan_records,
    records_while_active_says_0,
];

fn ring_deleted(c: &mut redis::Connection, p: &str) {
    let _: () = redis::cmd("DEL").arg(format!("{p}gring")).query(c).unwrap();
}

fn ring_duplicates(c: &mut redis::Connection, p: &str) {
    let lanes = ring(c, p);
    let _: () = redis::cmd("RPUSH")
        .arg(format!("{p}gring"))
        .arg(&lanes)
        .query(c)
        .unwrap();
}

fn ring_unserviceable(c: &mut redis::Connection, p: &str) {
    // Paused (e), at its ceiling (c, forced here), unknown (ghost).
    hset(c, &format!("{p}glimit"), "c", "1");
    hset(c, &format!("{p}gactive"), "c", "1");
    let _: () = redis::cmd("RPUSH")
        .arg(format!("{p}gring"))
        .arg(&["e", "c", "ghost", "e"])
        .query(c)
        .unwrap();
}

fn active_too_high(c: &mut redis::Connection, p: &str) {
    // A lane at its ceiling by a count no lease backs: it stalls.
    hset(c, &format!("{p}gactive"), "b", "2");
    hset(c, &format!("{p}gactive"), "d", "9");
    let _: () = redis::cmd("LREM")
        .arg(format!("{p}gring"))
        .arg(0)
        .arg("b")
        .query(c)
        .unwrap();
}

fn active_negative(c: &mut redis::Connection, p: &str) {
    let lane = leased_lane(c, p);
    hset(c, &format!("{p}gactive"), &lane, "-3");
}

fn active_too_low_under_a_ceiling(c: &mut redis::Connection, p: &str) {
    // Lane a holds 3 leases; at a ceiling of 3 it is full. A count of 1
    // would let claims lease two more past the ceiling.
    cmd(c, &["EMQ.LIMIT", p, "a", "3"]);
    hset(c, &format!("{p}gactive"), "a", "1");
}

fn active_missing(c: &mut redis::Connection, p: &str) {
    let _: () = redis::cmd("DEL").arg(format!("{p}gactive")).query(c).unwrap();
}

fn active_not_a_number(c: &mut redis::Connection, p: &str) {
    let lane = leased_lane(c, p);
    hset(c, &format!("{p}gactive"), &lane, "lots");
}

fn orphan_records(c: &mut redis::Connection, p: &str) {
    // Records with no lease: one of a pending lane, one of a lane named
    // nowhere else, one whose job is then enqueued again.
    hset(c, &format!("{p}jlease"), "o1", "123 a");
    hset(c, &format!("{p}jlease"), "o2", "123 nowhere");
    hset(c, &format!("{p}jlease"), "o3", "123 d");
}

fn records_while_active_says_0(c: &mut redis::Connection, p: &str) {
    // Lane b (ceiling 2) holds a lease its count no longer shows.
    let _: () = redis::cmd("HDEL")
        .arg(format!("{p}gactive"))
        .arg("b")
        .query(c)
        .unwrap();
}

/// One kind of damage, repaired by LANES + REPAIR: every invariant holds
/// again, a second repair changes nothing, and the claims that follow serve
/// every lane that has jobs and is not paused.
fn repaired(what: &str, damage: Damage) {
    let server = Server::start();
    let mut c = server.conn();
    let p = "d{o}:";
    let alive = healthy(&mut c, p);
    check(&mut c, p, &alive).unwrap_or_else(|e| panic!("before {what}: {e}"));
    damage(&mut c, p);
    assert!(check(&mut c, p, &alive).is_err(), "{what}: the damage shows");

    // A dry run (one lane per call) reports the change and writes nothing.
    let before = snapshot(&mut c, p);
    let lanes: BTreeSet<String> = all_lanes(&mut c, p, 10).0.into_iter().collect();
    let dry: usize = lanes
        .iter()
        .filter(|l| fields(&cmd(&mut c, &["EMQ.REPAIR", p, l, "DRYRUN"]))["changed"] == Value::Int(1))
        .count();
    assert!(dry > 0, "{what}: a dry run finds it");
    assert_eq!(snapshot(&mut c, p), before, "{what}: DRYRUN wrote");

    let changed = repair_all(&mut c, p);
    assert_eq!(changed, dry, "{what}: the dry run foretold the repair");
    check(&mut c, p, &alive).unwrap_or_else(|e| panic!("after repairing {what}: {e}"));
    assert_eq!(repair_all(&mut c, p), 0, "{what}: a repaired queue needs none");

    // The orphans' job ids can be enqueued again.
    if what.starts_with("orphan") {
        assert_eq!(
            int_reply(&mut c, &["EMQ.ENQUEUE", p, "d", "9", "o3"]),
            1,
            "{what}"
        );
        let _: () = redis::cmd("ZREM")
            .arg(format!("{p}g:d:pending"))
            .arg("o3")
            .query(&mut c)
            .unwrap();
    }
    // Every lane with jobs and no pause is served (the ceiling lanes once
    // their leases end: ack them first).
    let recs: BTreeMap<String, String> = redis::cmd("HGETALL")
        .arg(format!("{p}jlease"))
        .query(&mut c)
        .unwrap();
    let tokens: BTreeMap<String, i64> = redis::cmd("ZRANGE")
        .arg(format!("{p}leases"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query::<Vec<(String, i64)>>(&mut c)
        .unwrap()
        .into_iter()
        .collect();
    for job in recs.keys() {
        let n = int_reply(&mut c, &["EMQ.ACK", p, &tokens[job].to_string(), job]);
        assert_eq!(n, 1, "{what}: ack {job}");
    }
    let waiting: BTreeSet<String> = ["a", "b", "c", "d"]
        .iter()
        .filter(|l| int_reply(&mut c, &["ZCARD", &format!("{p}g:{l}:pending")]) > 0)
        .map(|l| l.to_string())
        .collect();
    let served = drain(&mut c, p);
    assert_eq!(served, waiting, "{what}: the claims serve every lane with jobs");
    for l in ["a", "b", "c", "d"] {
        assert_eq!(
            int_reply(&mut c, &["ZCARD", &format!("{p}g:{l}:pending")]),
            0,
            "{what}: {l} drained"
        );
    }
}

#[test]
fn repair_mends_a_deleted_ring() {
    repaired("the ring deleted", ring_deleted);
}

#[test]
fn repair_mends_a_ring_holding_lanes_twice() {
    repaired("duplicates in the ring", ring_duplicates);
}

#[test]
fn repair_mends_a_ring_holding_unserviceable_lanes() {
    repaired("unserviceable lanes in the ring", ring_unserviceable);
}

#[test]
fn repair_mends_an_active_count_too_high() {
    repaired("gactive too high", active_too_high);
}

#[test]
fn repair_mends_a_negative_active_count() {
    repaired("gactive negative", active_negative);
}

#[test]
fn repair_mends_an_active_count_too_low_under_a_ceiling() {
    repaired("gactive too low under a ceiling", active_too_low_under_a_ceiling);
}

#[test]
fn repair_mends_a_missing_active_hash() {
    repaired("gactive missing", active_missing);
}

#[test]
fn repair_mends_an_active_count_that_is_not_a_number() {
    repaired("gactive not a number", active_not_a_number);
}

#[test]
fn repair_removes_orphan_lease_records() {
    repaired("orphan lease records", orphan_records);
}

#[test]
fn repair_mends_records_while_the_active_count_says_0() {
    repaired("records while gactive says 0", records_while_active_says_0);
}

#[test]
fn repair_reports_what_it_changed() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "r{o}:";
    cmd(&mut c, &["EMQ.ENQUEUE", p, "a", "1", "x", "2", "y", "3", "z"]);
    let (_, token, jobs) = cmd(&mut c, &["EMQ.CLAIM", p, "600000"]).claim().unwrap();
    hset(&mut c, &format!("{p}gactive"), "a", "7");
    hset(&mut c, &format!("{p}jlease"), "ghost", "5 a");
    let _: () = redis::cmd("RPUSH")
        .arg(format!("{p}gring"))
        .arg("a")
        .query(&mut c)
        .unwrap();
    let r = fields(&cmd(&mut c, &["EMQ.REPAIR", p, "a"]));
    assert_eq!(r["changed"], Value::Int(1));
    assert_eq!(r["ringed_before"], Value::Int(2));
    assert_eq!(r["ringed_after"], Value::Int(1));
    assert_eq!(text(&r["active_before"]), "7");
    assert_eq!(r["active_after"], Value::Int(1));
    assert_eq!(r["orphan_records_removed"], Value::Int(1));
    assert_eq!(r["dry_run"], Value::Int(0));
    assert_eq!(ring(&mut c, p), vec!["a"]);
    // The real lease is kept and still acks.
    assert_eq!(
        int_reply(&mut c, &["EMQ.ACK", p, &token.to_string(), &jobs[0]]),
        1
    );
    // A lane of nothing: nothing to change, no active field.
    let r = fields(&cmd(&mut c, &["EMQ.REPAIR", p, "nobody"]));
    assert_eq!(r["changed"], Value::Int(0));
    assert_eq!(r["active_before"], Value::Nil);
    // Bad input changes nothing.
    for (args, want) in [
        (vec!["EMQ.REPAIR", p, ""], "lane"),
        (vec!["EMQ.REPAIR", p, "a", "NOW"], "syntax"),
        (vec!["EMQ.REPAIR", p, "a", "DRYRUN", "x"], "syntax"),
        (vec!["EMQ.REPAIR", p, "a", "b"], "syntax"),
        (vec!["EMQ.REPAIR", p, "LANES", "3", "a", "b"], "numlanes"),
        (vec!["EMQ.REPAIR", p, "LANES", "0", "a"], "numlanes"),
        (vec!["EMQ.REPAIR", p, "LANES", "1", "a", "b"], "syntax"),
        (vec!["EMQ.REPAIR", p, "LANES", "2", "a", ""], "lane"),
    ] {
        let r = cmd(&mut c, &args);
        assert!(
            r.err().is_some_and(|e| e.to_lowercase().contains(want)),
            "{args:?}: {r:?}"
        );
    }
    // The batch form: a map per distinct lane, in order; a lane named
    // LANES or DRYRUN is still a lane in the one-lane form.
    let _: () = redis::cmd("RPUSH")
        .arg(format!("{p}gring"))
        .arg("ghost")
        .query(&mut c)
        .unwrap();
    let r = cmd(
        &mut c,
        &["EMQ.REPAIR", p, "LANES", "3", "ghost", "a", "ghost", "DRYRUN"],
    );
    let Value::Array(replies) = r.value() else {
        panic!("{r:?}")
    };
    assert_eq!(replies.len(), 2, "{r:?}");
    let ghost = fields(&Reply::Ok(replies[0].clone()));
    assert_eq!(
        (&ghost["changed"], &ghost["ringed_before"], &ghost["dry_run"]),
        (&Value::Int(1), &Value::Int(1), &Value::Int(1))
    );
    assert_eq!(fields(&Reply::Ok(replies[1].clone()))["changed"], Value::Int(0));
    assert_eq!(ring(&mut c, p), vec!["a", "ghost"], "a dry run");
    assert_eq!(
        fields(&cmd(&mut c, &["EMQ.REPAIR", p, "LANES"]))["changed"],
        Value::Int(0)
    );
    assert_eq!(
        fields(&cmd(&mut c, &["EMQ.REPAIR", p, "DRYRUN", "DRYRUN"]))["dry_run"],
        Value::Int(1)
    );
    cmd(&mut c, &["EMQ.REPAIR", p, "LANES", "1", "ghost"]);
    assert_eq!(ring(&mut c, p), vec!["a"]);

    // NOPERM-free damage to one lane's own state is reported, not an error.
    hset(&mut c, &format!("{p}glimit"), "a", "many");
    hset(&mut c, &format!("{p}gactive"), "a", "7");
    let r = fields(&cmd(&mut c, &["EMQ.REPAIR", p, "a"]));
    assert!(text(&r["damaged"]).contains("limit of lane 'a'"), "{r:?}");
    assert_eq!(
        r["active_after"],
        Value::Int(0),
        "the active count is still re-derived"
    );
    assert_eq!(
        fields(&cmd(&mut c, &["EMQ.REPAIR", p, "b"]))["damaged"],
        Value::Nil
    );
}

/// A lane whose ceiling or pending key is damaged cannot be judged
/// serviceable: REPAIR names the damage and leaves its ring membership (as
/// claims do), repairs the rest of the call's lanes, and EMQ.LIMIT — the
/// command that sets a ceiling — replaces the damaged one and settles the ring.
#[test]
fn damage_repair_cannot_judge_is_named_and_never_stops_the_other_lanes() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "x{o}:";
    let alive = healthy(&mut c, p);
    hset(&mut c, &format!("{p}glimit"), "c", "lots");
    let _: () = redis::cmd("DEL").arg(format!("{p}gring")).query(&mut c).unwrap();
    let _: () = redis::cmd("SET")
        .arg(format!("{p}g:zz:pending"))
        .arg("junk")
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("RPUSH")
        .arg(format!("{p}gring"))
        .arg("zz")
        .query(&mut c)
        .unwrap();
    let r = cmd(&mut c, &["EMQ.REPAIR", p, "LANES", "5", "a", "b", "c", "d", "zz"]);
    let Value::Array(replies) = r.value() else {
        panic!("{r:?}")
    };
    let by_lane: Vec<BTreeMap<String, Value>> =
        replies.iter().map(|v| fields(&Reply::Ok(v.clone()))).collect();
    assert!(
        text(&by_lane[2]["damaged"]).contains("limit of lane 'c'"),
        "{r:?}"
    );
    assert!(text(&by_lane[4]["damaged"]).contains("g:zz:pending"), "{r:?}");
    for i in [0, 1, 3] {
        assert_eq!(by_lane[i]["damaged"], Value::Nil, "{r:?}");
        assert_eq!(by_lane[i]["ringed_after"], Value::Int(1), "{r:?}");
    }
    let mut got = ring(&mut c, p);
    got.sort();
    assert_eq!(
        got,
        vec!["a", "b", "d", "zz"],
        "c left out, zz left in, the others back"
    );
    // The operator mends what REPAIR named: a new ceiling, the stray key.
    assert_eq!(cmd(&mut c, &["EMQ.LIMIT", p, "c", "5"]).value(), &Value::Okay);
    assert!(
        ring(&mut c, p).contains(&"c".to_string()),
        "LIMIT settled c in the ring"
    );
    let _: () = redis::cmd("DEL")
        .arg(format!("{p}g:zz:pending"))
        .query(&mut c)
        .unwrap();
    assert_eq!(repair_all(&mut c, p), 1, "zz leaves the ring");
    check(&mut c, p, &alive).unwrap();
}

/// REPAIR's writes reach a replica (one without the module) and an AOF
/// reload as the same keyspace.
#[test]
fn repair_replicates_and_persists_as_its_effects() {
    replicated_and_persisted(|c| {
        for (i, damage) in DAMAGES.iter().enumerate() {
            let p = format!("d{i}{{o}}:");
            healthy(c, &p);
            damage(c, &p);
            repair_all(c, &p);
        }
    });
}

/// REPAIR fires the events of the LREMs it replicates, in their order: one
/// `lrem` per lane, then `del` once when the ring is gone.
#[test]
fn repair_notifies_as_its_effects_would() {
    let server = Server::start_with(&["--notify-keyspace-events", "KEA"]);
    let mut c = server.conn();
    for p in ["n{o}:", "l{o}:"] {
        // Three stray entries: lanes with nothing pending.
        let _: () = redis::cmd("RPUSH")
            .arg(format!("{p}gring"))
            .arg(&["a", "b", "c", "a"])
            .query(&mut c)
            .unwrap();
    }
    let native = event_list(
        &server,
        &mut c,
        "n{o}:",
        &[b"EMQ.REPAIR", b"n{o}:", b"LANES", b"3", b"a", b"b", b"c"],
    );
    let lua = event_list(
        &server,
        &mut c,
        "l{o}:",
        &[
            b"EVAL",
            b"redis.call('LREM', KEYS[1], 0, 'a'); redis.call('LREM', KEYS[1], 0, 'b'); redis.call('LREM', KEYS[1], 0, 'c')",
            b"1",
            b"l{o}:gring",
        ],
    );
    let pair = |e: &str| (e.to_string(), "gring".to_string());
    assert_eq!(lua, vec![pair("lrem"), pair("lrem"), pair("lrem"), pair("del")]);
    assert_eq!(native, lua);
}

/// ACL: a user allowed the prefix and the lane keys, but not the lease keys,
/// may not read the queue's figures, walk its lanes or repair one.
#[test]
fn operating_commands_check_every_key() {
    let server = Server::start();
    let mut c = server.conn();
    healthy(&mut c, "emq:{a}:");
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "op", "on", ">pw", "~emq:{a}:", "~emq:{a}:g*", "+@all"])
        .query(&mut c)
        .unwrap();
    let client = redis::Client::open(format!("redis://op:pw@127.0.0.1:{}/", server.port)).unwrap();
    let mut op = client.get_connection().unwrap();
    for args in [
        vec!["EMQ.QUEUE", "emq:{a}:"],
        vec!["EMQ.LANES", "emq:{a}:", "0", "COUNT", "1000"],
        vec!["EMQ.REPAIR", "emq:{a}:", "a"],
    ] {
        let r = cmd(&mut op, &args);
        assert!(
            r.err().is_some_and(|e| e.starts_with("NOPERM")),
            "{args:?}: {r:?}"
        );
    }
}

/// EMQ.LIMIT replaces a ceiling that is no number (the fix REPAIR points
/// to), natively and in the twin alike, and the ring then holds the lane
/// exactly as its new state says, whatever it held.
#[test]
fn limit_replaces_a_damaged_ceiling() {
    both(|c, emq, p| {
        emq.run(c, "enqueue", &[p, "a", "1", "x", "2", "y"]);
        emq.run(c, "enqueue", &[p, "b", "1", "z"]);
        for (ring_before, limit, want) in [
            (vec!["a", "b"], "2", vec!["a", "b"]),
            (vec!["b"], "NONE", vec!["b", "a"]),
            (vec!["a", "b", "a"], "5", vec!["b", "a"]),
        ] {
            hset(c, &format!("{p}glimit"), "a", "lots");
            let _: () = redis::cmd("DEL").arg(format!("{p}gring")).query(c).unwrap();
            let _: () = redis::cmd("RPUSH")
                .arg(format!("{p}gring"))
                .arg(&ring_before)
                .query(c)
                .unwrap();
            let r = emq.run(c, "limit", &[p, "a", limit]);
            assert_eq!(r.value(), &Value::Okay, "{:?} {ring_before:?}: {r:?}", emq.flavor);
            assert_eq!(ring(c, p), want, "{:?} {ring_before:?}", emq.flavor);
        }
        // Another damaged value of the lane is still an error, and changes nothing.
        hset(c, &format!("{p}gactive"), "a", "many");
        hset(c, &format!("{p}glimit"), "a", "lots");
        let before = snapshot(c, p);
        let r = emq.run(c, "limit", &[p, "a", "3"]);
        assert!(
            r.err().is_some_and(|e| e.contains("active count of lane 'a'")),
            "{r:?}"
        );
        assert_eq!(snapshot(c, p), before, "{:?}", emq.flavor);
    });
}
