//! Fairness you can see (docs/commands.md, "EMQ.STATS"): the figures a known
//! sequence of turns gives, waits from the branded ids, busy time, the
//! rotation's guarantee under concurrent claimers, and the figures' bounds —
//! all in memory: a replica and an AOF load record nothing.

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use emq::model::figures::brand::brand;
use support::fixtures::{fill, now_ms, served};
use support::replication::{digest, in_sync, replicate_into};
use support::{info_field, Conn, Server, Value};

const P: &str = "fig{q}:";

fn stats(c: &mut Conn, lane: &str) -> Value {
    c.ok(&["EMQ.STATS", P, lane])
}

fn num(v: &Value, name: &str) -> i64 {
    match v.field(name) {
        Some(Value::Int(n)) => *n,
        other => panic!("{name}: {other:?} in {}", v.render()),
    }
}

fn opt(v: &Value, name: &str) -> Option<i64> {
    match v.field(name) {
        Some(Value::Nil) => None,
        Some(Value::Int(n)) => Some(*n),
        other => panic!("{name}: {other:?}"),
    }
}

fn float(v: &Value, name: &str) -> f64 {
    match v.field(name) {
        Some(Value::Double(d)) => *d,
        Some(Value::Bulk(b)) => String::from_utf8_lossy(b).parse().unwrap(),
        other => panic!("{name}: {other:?}"),
    }
}

/// The turns each clamp decided.
fn clamps(v: &Value, name: &str) -> BTreeMap<String, i64> {
    let m = v.field(name).unwrap_or_else(|| panic!("no {name}"));
    ["weight", "depth", "ceiling", "rate", "max-claim", "one"]
        .iter()
        .map(|c| (c.to_string(), m.field(c).map_or(-1, Value::int)))
        .filter(|(_, n)| *n != 0)
        .collect()
}

fn counts(pairs: &[(&str, i64)]) -> BTreeMap<String, i64> {
    pairs.iter().map(|(c, n)| (c.to_string(), *n)).collect()
}

#[test]
fn a_known_sequence_of_turns_gives_its_turns_jobs_and_clamps() {
    let server = Server::start();
    let mut c = server.conn();
    c.ok(&["CONFIG", "SET", "emq.max-claim", "4"]);
    for (lane, n, weight) in [
        ("w", 20, "3"),
        ("d", 2, "5"),
        ("c", 5, "4"),
        ("r", 10, "5"),
        ("m", 20, "50"),
    ] {
        fill(&mut c, P, lane, n);
        c.ok(&["EMQ.WEIGHT", P, lane, weight]);
    }
    c.ok(&["EMQ.LIMIT", P, "c", "1"]);
    c.ok(&["EMQ.RATE", P, "r", "2", "600000"]);
    // One rotation: w by its weight, d by its depth (and out), c by its
    // ceiling (out), r by its rate (out, throttled), m by emq.max-claim.
    let k: Vec<usize> = (0..5)
        .map(|_| served(&c.ok(&["EMQ.WCLAIM", P, "600000"])).len())
        .collect();
    assert_eq!(k, [3, 2, 1, 2, 4]);
    // Rung by a script that knows no ceiling or rate: their turns serve
    // nothing, under the clamp that held them.
    c.ok(&["RPUSH", &format!("{P}ring"), "c", "r"]);
    let k: Vec<usize> = (0..4)
        .map(|_| served(&c.ok(&["EMQ.WCLAIM", P, "600000"])).len())
        .collect();
    assert_eq!(k, [3, 4, 0, 0]);
    assert_eq!(served(&c.ok(&["EMQ.CLAIM", P, "600000"])).len(), 1, "w, one");

    // Lane, turns, jobs, and the turns of each clamp.
    type Want<'a> = (&'a str, i64, i64, &'a [(&'a str, i64)]);
    let want: [Want; 5] = [
        ("w", 3, 7, &[("weight", 2), ("one", 1)]),
        ("d", 1, 2, &[("depth", 1)]),
        ("c", 2, 1, &[("ceiling", 2)]),
        ("r", 2, 2, &[("rate", 2)]),
        ("m", 2, 8, &[("max-claim", 2)]),
    ];
    for (lane, turns, jobs, clamp) in want {
        let s = stats(&mut c, lane);
        assert_eq!((num(&s, "turns"), num(&s, "jobs")), (turns, jobs), "{lane}");
        assert_eq!(clamps(&s, "clamp"), counts(clamp), "{lane}");
        assert_eq!(
            (num(&s, "total_turns"), num(&s, "total_jobs")),
            (turns, jobs),
            "{lane}"
        );
        assert_eq!(clamps(&s, "total_clamp"), counts(clamp), "{lane}");
        let share = float(&s, "share");
        assert!((share - jobs as f64 / 20.0).abs() < 1e-9, "{lane}: share {share}");
    }
    let q = c.ok(&["EMQ.STATS", P, "BY", "jobs"]);
    assert_eq!((num(&q, "jobs"), num(&q, "lanes_served")), (20, 5));
    let order: Vec<String> = q
        .field("lanes")
        .unwrap()
        .items()
        .iter()
        .map(|l| l.field("lane").unwrap().text())
        .collect();
    assert_eq!(order, ["m", "w", "d", "r", "c"], "by jobs, ties by name");
    // Weight shares: of the lanes served in the window (3+5+4+5+50 = 67).
    let w = stats(&mut c, "w");
    assert!((float(&w, "weight_share") - 3.0 / 67.0).abs() < 1e-9);
    // RESET forgets them.
    assert_eq!(c.ok(&["EMQ.STATS", P, "RESET"]), Value::Simple("OK".into()));
    let w = stats(&mut c, "w");
    assert_eq!((num(&w, "turns"), num(&w, "total_jobs")), (0, 0));
    assert_eq!(num(&w, "depth"), 13, "the live fields stay");
}

#[test]
fn waits_come_from_the_ids_mint_time_and_count_once() {
    let server = Server::start();
    let mut c = server.conn();
    let now = now_ms(&mut c);
    // Minted 10 s, 2 s and 0.5 s ago; and a plain id (no mint time).
    let ids: Vec<String> = [10_000, 2_000, 500]
        .iter()
        .enumerate()
        .map(|(i, ago)| String::from_utf8(brand(b"JOB", now - ago, i as u64)).unwrap())
        .collect();
    for (i, id) in ids.iter().enumerate() {
        c.ok(&["EMQ.ENQUEUE", P, &format!("l{i}"), id, "p"]);
    }
    c.ok(&["EMQ.ENQUEUE", P, "plain", "JOB-plain-1", "p"]);
    let head = stats(&mut c, "l0");
    let oldest = opt(&head, "oldest_wait_ms").unwrap();
    assert!((10_000..10_000 + 2_000).contains(&oldest), "{oldest}");
    assert_eq!(
        opt(&stats(&mut c, "plain"), "oldest_wait_ms"),
        None,
        "no mint time"
    );
    let mut tokens = Vec::new();
    for _ in 0..4 {
        for (job, _, token, lane) in served(&c.ok(&["EMQ.CLAIM", P, "600000"])) {
            tokens.push((job, token, lane));
        }
    }
    let claimed = now_ms(&mut c);
    for (i, ago) in [10_000i64, 2_000, 500].iter().enumerate() {
        let s = stats(&mut c, &format!("l{i}"));
        let elapsed = claimed - now;
        for f in ["wait_p50_ms", "wait_p90_ms", "wait_p99_ms", "total_wait_max_ms"] {
            let got = opt(&s, f).unwrap() as f64;
            let lo = *ago as f64 * 0.95;
            let hi = (ago + elapsed) as f64 * 1.05;
            assert!(got >= lo && got <= hi, "l{i} {f}: {got} not in {lo}..{hi}");
        }
        assert_eq!(opt(&s, "oldest_wait_ms"), None, "empty now");
    }
    let plain = stats(&mut c, "plain");
    assert_eq!((num(&plain, "jobs"), opt(&plain, "wait_max_ms")), (1, None));
    // Claimed again after a retry: no second wait.
    let (job, token, lane) = tokens.iter().find(|t| t.2 == "l0").unwrap().clone();
    c.ok(&["EMQ.RETRY", P, &job, &token.to_string(), "0", "5", "again"]);
    c.ok(&["EMQ.PROMOTE", P]);
    assert_eq!(served(&c.ok(&["EMQ.CLAIM", P, "600000"]))[0].0, job);
    let s = stats(&mut c, &lane);
    assert_eq!(num(&s, "jobs"), 2);
    let q = c.ok(&["EMQ.STATS", P]);
    let waits: i64 = ["l0", "l1", "l2"]
        .iter()
        .map(|l| opt(&stats(&mut c, l), "total_wait_max_ms").map_or(0, |_| 1))
        .sum();
    assert_eq!(waits, 3);
    assert!(
        opt(&q, "wait_p99_ms").unwrap() >= 9_500,
        "the queue's waits are every lane's"
    );
}

/// Claims `lane`'s turn of `k` jobs under WCLAIM.
fn claim_turn(c: &mut Conn, lease: &str) -> Vec<(String, Option<String>, i64, String)> {
    served(&c.ok(&["EMQ.WCLAIM", P, lease]))
}

#[test]
fn busy_time_is_the_time_each_job_used() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "a", 10);
    c.ok(&["EMQ.WEIGHT", P, "a", "2"]);
    // A turn of two, worked one after the other: 300 ms, then 100 ms.
    let turn = claim_turn(&mut c, "600000");
    assert_eq!(turn.len(), 2);
    thread::sleep(Duration::from_millis(300));
    c.ok(&["EMQ.COMPLETE", P, &turn[0].0, "1"]);
    let first = num(&stats(&mut c, "a"), "busy_ms");
    assert!((300..450).contains(&first), "a 300 ms job: {first}");
    thread::sleep(Duration::from_millis(100));
    c.ok(&["EMQ.RETRY", P, &turn[1].0, "1", "60000", "5", "later"]);
    let both = num(&stats(&mut c, "a"), "busy_ms");
    assert!(
        (400..600).contains(&both),
        "from the previous end, not the claim: {both}"
    );
    // An expired lease counts up to its deadline.
    let turn = claim_turn(&mut c, "200");
    thread::sleep(Duration::from_millis(400));
    assert_eq!(c.int(&["EMQ.REAP", P]), 2);
    let s = stats(&mut c, "a");
    let expired = num(&s, "busy_ms") - both;
    assert!(
        (200..300).contains(&expired),
        "two jobs, 200 ms lease: {expired} ({turn:?})"
    );
    assert_eq!(num(&s, "leases_ended"), 4);
    // DELAY ends a lease too.
    let turn = claim_turn(&mut c, "600000");
    c.ok(&["EMQ.DELAY", P, &turn[0].0, &turn[0].2.to_string(), "IN", "60000"]);
    assert_eq!(num(&stats(&mut c, "a"), "leases_ended"), 5);
    let q = c.ok(&["EMQ.STATS", P]);
    assert_eq!(num(&q, "lanes_served"), 1);
    assert!((float(&stats(&mut c, "a"), "busy_share") - 1.0).abs() < 1e-9);
}

#[test]
fn a_lease_a_script_granted_adds_no_busy_time() {
    let server = Server::start();
    let mut c = server.conn();
    let twins = support::twins::Twins::load(&mut c);
    fill(&mut c, P, "a", 2);
    let reply = twins
        .like_native(&mut c, "claim", &[P.as_bytes(), b"600000"])
        .unwrap();
    let (job, _, token, _) = served(&reply)[0].clone();
    thread::sleep(Duration::from_millis(50));
    c.ok(&["EMQ.COMPLETE", P, &job, &token.to_string()]);
    let s = stats(&mut c, "a");
    assert_eq!(
        (num(&s, "turns"), num(&s, "busy_ms"), num(&s, "leases_ended")),
        (0, 0, 0)
    );
}

/// Under 16 concurrent claimers, lanes that stayed backlogged and were
/// served their full weight every turn got the same turns within one: jobs
/// per unit of weight differ by at most one turn's worth.
#[test]
fn sixteen_claimers_show_the_rotations_share_per_unit_of_weight() {
    let server = Server::start();
    let mut c = server.conn();
    let weights = [3, 1, 4, 1, 5, 2, 6, 2];
    for (i, w) in weights.iter().enumerate() {
        let lane = format!("t{i}");
        fill(&mut c, P, &lane, 2_000);
        c.ok(&["EMQ.WEIGHT", P, &lane, &w.to_string()]);
    }
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..16)
        .map(|_| {
            let mut w = server.conn();
            let stop = stop.clone();
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    for (job, _, token, _) in served(&w.ok(&["EMQ.WCLAIM", P, "600000"])) {
                        w.int(&["EMQ.COMPLETE", P, &job, &token.to_string()]);
                    }
                }
            })
        })
        .collect();
    let started = Instant::now();
    // 101 rotations' worth (24 jobs each): every lane, within one turn of
    // the others, has had at least 100 turns whatever the claims in flight.
    while num(&c.ok(&["EMQ.STATS", P]), "jobs") < 2_424 && started.elapsed() < Duration::from_secs(60) {
        thread::sleep(Duration::from_millis(20));
    }
    stop.store(true, Ordering::Relaxed);
    workers.into_iter().for_each(|w| w.join().unwrap());
    let mut per_weight = Vec::new();
    for (i, w) in weights.iter().enumerate() {
        let s = stats(&mut c, &format!("t{i}"));
        let (turns, jobs) = (num(&s, "turns"), num(&s, "jobs"));
        assert_eq!(
            clamps(&s, "clamp"),
            counts(&[("weight", turns)]),
            "t{i}: full weight every turn"
        );
        assert!(num(&s, "depth") > 0, "t{i} stayed backlogged");
        per_weight.push(jobs as f64 / *w as f64);
    }
    let (lo, hi) = per_weight
        .iter()
        .fold((f64::MAX, 0f64), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
    assert!(lo >= 100.0, "enough turns: {per_weight:?}");
    assert!(
        hi - lo <= 1.0,
        "jobs per unit of weight differ by more than one turn: {per_weight:?}"
    );
    let shares: f64 = (0..weights.len())
        .map(|i| float(&stats(&mut c, &format!("t{i}")), "weight_share"))
        .sum();
    assert!((shares - 1.0).abs() < 1e-9, "weight shares sum to 1: {shares}");
}

#[test]
fn a_replica_and_an_aof_load_record_nothing() {
    for mode in ["effects", "command"] {
        let args = [
            "--appendonly",
            "yes",
            "--appendfsync",
            "always",
            "--emq.replicate",
            mode,
        ];
        let primary = Server::start_with(&args);
        let replica = Server::start_with(&["--emq.replicate", mode]);
        let mut r = replicate_into(&replica, &primary);
        let mut c = primary.conn();
        fill(&mut c, P, "a", 6);
        c.ok(&["EMQ.WEIGHT", P, "a", "2"]);
        for _ in 0..3 {
            for (job, _, token, _) in claim_turn(&mut c, "600000") {
                c.ok(&["EMQ.COMPLETE", P, &job, &token.to_string()]);
            }
        }
        let before = digest(&mut c);
        c.ok(&["EMQ.STATS", P, "a"]);
        c.ok(&["EMQ.STATS", P]);
        c.ok(&["EMQ.STATS", P, "RESET"]);
        assert_eq!(digest(&mut c), before, "{mode}: EMQ.STATS writes nothing");
        in_sync(&mut c, &mut r);
        assert_eq!(
            digest(&mut r),
            before,
            "{mode}: the replica holds the primary's keyspace"
        );
        let on_replica = r.ok(&["EMQ.STATS", P, "a"]);
        assert_eq!(
            (num(&on_replica, "total_turns"), num(&on_replica, "total_busy_ms")),
            (0, 0),
            "{mode}: a replica records nothing"
        );
        assert_eq!(info_field(&mut r, "emq", "emq_stats_lanes").as_deref(), Some("0"));
        drop(r);
        drop(replica);
        let reloaded = primary.restart(&args);
        let mut c = reloaded.conn();
        assert_eq!(digest(&mut c), before);
        assert_eq!(
            num(&stats(&mut c, "a"), "total_turns"),
            0,
            "{mode}: an AOF load records nothing"
        );
    }
}

#[test]
fn bad_input_is_refused() {
    let server = Server::start();
    let mut c = server.conn();
    for (args, err) in [
        (
            &["BY", "fastest"][..],
            "ERR BY must be oldest, wait, jobs or busy",
        ),
        (&["COUNT", "0"], "ERR COUNT must be an integer >= 1"),
        (&["COUNT", "x"], "ERR COUNT must be an integer >= 1"),
        (&["COUNT", "1", "COUNT", "2"], "ERR syntax error"),
        (&["BY", "jobs", "extra"], "ERR syntax error"),
        (&["LANE", "a", "b"], "ERR syntax error"),
        (&[""], "ERR the lane must not be empty"),
    ] {
        let mut full = vec!["EMQ.STATS", P];
        full.extend_from_slice(args);
        assert_eq!(c.cmd(&full).unwrap_err(), err, "{args:?}");
    }
    assert!(c
        .cmd(&["EMQ.STATS"])
        .unwrap_err()
        .contains("wrong number of arguments"));
    // A lane never served: zeros, and its live fields.
    let s = stats(&mut c, "never");
    assert_eq!((num(&s, "turns"), num(&s, "depth"), num(&s, "weight")), (0, 0, 1));
    // A lane named like a keyword is read with LANE.
    fill(&mut c, P, "RESET", 1);
    assert_eq!(num(&c.ok(&["EMQ.STATS", P, "LANE", "RESET"]), "depth"), 1);
    c.ok(&["HELLO", "3"]);
    assert!(matches!(stats(&mut c, "never"), Value::Map(_)));
    assert!(matches!(
        stats(&mut c, "never").field("share"),
        Some(Value::Double(_))
    ));
}

#[test]
fn the_lanes_idle_longest_go_first_within_emq_stats_lanes() {
    let server = Server::start();
    let mut c = server.conn();
    c.ok(&["CONFIG", "SET", "emq.stats-lanes", "100"]);
    for i in 0..150 {
        let lane = format!("l{i:03}");
        fill(&mut c, P, &lane, 1);
        assert_eq!(claim_turn(&mut c, "600000").len(), 1);
    }
    let tracked: i64 = info_field(&mut c, "emq", "emq_stats_lanes")
        .unwrap()
        .parse()
        .unwrap();
    assert!(tracked <= 100, "{tracked}");
    assert_eq!(
        num(&stats(&mut c, "l000"), "total_turns"),
        0,
        "the idlest, dropped"
    );
    assert_eq!(num(&stats(&mut c, "l149"), "total_turns"), 1, "the latest, kept");
    c.ok(&["CONFIG", "SET", "emq.stats-lanes", "0"]);
    fill(&mut c, P, "more", 1);
    claim_turn(&mut c, "600000");
    assert_eq!(info_field(&mut c, "emq", "emq_stats_lanes").as_deref(), Some("0"));
    assert_eq!(num(&stats(&mut c, "more"), "turns"), 0, "0 tracks none");
}

/// The bound holds when leases end after their lanes were dropped, and a
/// lowered bound (0: none) takes effect at once, for reads too.
#[test]
fn a_lowered_bound_holds_at_once_and_for_lease_ends() {
    let server = Server::start();
    let mut c = server.conn();
    let mut leased = Vec::new();
    for i in 0..6 {
        let lane = format!("l{i}");
        fill(&mut c, P, &lane, 1);
        leased.extend(claim_turn(&mut c, "600000"));
    }
    let tracked = |c: &mut Conn| -> i64 { info_field(c, "emq", "emq_stats_lanes").unwrap().parse().unwrap() };
    assert_eq!(tracked(&mut c), 6);
    c.ok(&["CONFIG", "SET", "emq.stats-lanes", "2"]);
    assert_eq!(tracked(&mut c), 2, "lowered: at once");
    for (job, _, token, _) in &leased {
        c.ok(&["EMQ.COMPLETE", P, job, &token.to_string()]);
        assert!(
            tracked(&mut c) <= 2,
            "a lease's end brought a dropped lane back past the bound"
        );
    }
    c.ok(&["CONFIG", "SET", "emq.stats-lanes", "0"]);
    assert_eq!(tracked(&mut c), 0);
    assert_eq!(
        info_field(&mut c, "emq", "emq_stats_leases").as_deref(),
        Some("0")
    );
    assert_eq!(
        num(&stats(&mut c, "l5"), "total_leases_ended"),
        0,
        "forgotten at once"
    );
}

/// The bound docs/commands.md gives for a lane served in one tenth of the
/// window ("EMQ.STATS", memory).
const BYTES_PER_LANE: u64 = 600;

#[test]
fn a_hundred_thousand_lanes_are_tracked_within_the_documented_bound() {
    let server = Server::start();
    let mut c = server.conn();
    let n = 100_000;
    for chunk in (0..n).collect::<Vec<_>>().chunks(5_000) {
        let cmds: Vec<Vec<Vec<u8>>> = chunk
            .iter()
            .map(|i| {
                ["EMQ.ENQUEUE", P, &format!("t{i}"), &format!("JOB-{i}"), "p"]
                    .map(|a| a.as_bytes().to_vec())
                    .to_vec()
            })
            .collect();
        c.pipeline(&cmds)
            .unwrap()
            .into_iter()
            .for_each(|r| assert_eq!(r, Ok(Value::Int(1))));
        let claims: Vec<Vec<Vec<u8>>> = chunk
            .iter()
            .map(|_| {
                ["EMQ.WCLAIM", P, "600000"]
                    .map(|a| a.as_bytes().to_vec())
                    .to_vec()
            })
            .collect();
        c.pipeline(&claims)
            .unwrap()
            .into_iter()
            .for_each(|r| assert_eq!(served(&r.unwrap()).len(), 1));
    }
    let field = |c: &mut Conn, f: &str| -> u64 { info_field(c, "emq", f).unwrap().parse().unwrap() };
    assert_eq!(field(&mut c, "emq_stats_lanes"), n as u64);
    let bytes = field(&mut c, "emq_stats_bytes");
    // The leases not yet ended count too.
    let per_lane = bytes / n as u64;
    assert!(
        per_lane <= BYTES_PER_LANE,
        "{per_lane} bytes a lane ({bytes} in all)"
    );
    let q = c.ok(&["EMQ.STATS", P, "COUNT", "3", "BY", "jobs"]);
    assert_eq!(
        (num(&q, "lanes_served"), q.field("lanes").unwrap().items().len()),
        (n, 3)
    );
}
