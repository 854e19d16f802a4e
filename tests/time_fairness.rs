//! Fairness by time (docs/commands.md, "EMQ.POLICY"): under `fairness time`
//! a weight is a share of worker time, measured by the module from the
//! leases' ends; under `count` (EchoMQ's rule) it is jobs per turn. Workers
//! here claim, work each job for its lane's cost, and complete it; the test
//! measures the worker time each lane got.

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use support::fixtures::{fill, hget, served};
use support::replication::{digest, replicated_and_persisted};
use support::{Conn, Server, Value};

const P: &str = "tf{q}:";

/// Runs `workers` workers for `run`: each WCLAIMs, works each job for its
/// lane's cost (ms), and completes it. The worker time each lane got (s).
fn work(
    server: &Server,
    workers: usize,
    run: Duration,
    costs: &BTreeMap<String, u64>,
) -> BTreeMap<String, f64> {
    let stop = Arc::new(AtomicBool::new(false));
    let handles: Vec<_> = (0..workers)
        .map(|_| {
            let mut w = server.conn();
            let stop = stop.clone();
            let costs = costs.clone();
            thread::spawn(move || {
                let mut used: BTreeMap<String, f64> = BTreeMap::new();
                while !stop.load(Ordering::Relaxed) {
                    let jobs = served(&w.ok(&["EMQ.WCLAIM", P, "60000"]));
                    if jobs.is_empty() {
                        thread::sleep(Duration::from_millis(1));
                    }
                    for (job, _, token, lane) in jobs {
                        let start = Instant::now();
                        thread::sleep(Duration::from_millis(costs[&lane]));
                        w.ok(&["EMQ.COMPLETE", P, &job, &token.to_string()]);
                        *used.entry(lane).or_default() += start.elapsed().as_secs_f64();
                    }
                }
                used
            })
        })
        .collect();
    thread::sleep(run);
    stop.store(true, Ordering::Relaxed);
    let mut total: BTreeMap<String, f64> = BTreeMap::new();
    for h in handles {
        for (lane, t) in h.join().unwrap() {
            *total.entry(lane).or_default() += t;
        }
    }
    total
}

fn shares(used: &BTreeMap<String, f64>) -> BTreeMap<String, f64> {
    let all: f64 = used.values().sum();
    used.iter().map(|(l, t)| (l.clone(), t / all)).collect()
}

/// Two lanes, jobs of 20 ms and of 2 ms, four workers: by count the slow
/// lane holds about 90% of the worker time; by time each holds half at
/// equal weights, and the fast lane three quarters at weight 3.
#[test]
fn a_weight_is_a_share_of_worker_time_under_fairness_by_time() {
    let costs: BTreeMap<String, u64> = [("slow".to_string(), 20), ("fast".to_string(), 2)].into();
    let run = Duration::from_secs(5);
    for (policy, fast_weight, want_fast) in [
        ("count", 1, None),
        ("time", 1, Some(0.5)),
        ("time", 3, Some(0.75)),
    ] {
        let server = Server::start();
        let mut c = server.conn();
        fill(&mut c, P, "slow", 2_000);
        fill(&mut c, P, "fast", 20_000);
        c.ok(&["EMQ.WEIGHT", P, "fast", &fast_weight.to_string()]);
        if policy == "time" {
            c.ok(&["EMQ.POLICY", P, "fairness", "time", "QUANTUM", "20"]);
        }
        let s = shares(&work(&server, 4, run, &costs));
        eprintln!("{policy}, fast lane weight {fast_weight}: shares of worker time {s:?}");
        let fast = s.get("fast").copied().unwrap_or(0.0);
        match want_fast {
            None => assert!(fast < 0.2, "count: the slow lane holds the workers: {s:?}"),
            Some(want) => assert!(
                (fast - want).abs() <= 0.10,
                "time, fast weight {fast_weight}: fast {fast:.3}, want {want} ± 0.10: {s:?}"
            ),
        }
    }
}

/// Twenty lanes of weights 1 to 3 and costs 1 to 60 ms: every lane's share
/// of worker time within 20% of its share of weight.
#[test]
fn twenty_lanes_get_worker_time_by_weight() {
    let server = Server::start();
    let mut c = server.conn();
    c.ok(&["EMQ.POLICY", P, "fairness", "time", "QUANTUM", "20"]);
    let mut costs = BTreeMap::new();
    let mut weights = BTreeMap::new();
    for i in 0..20u64 {
        let lane = format!("t{i:02}");
        let cost = 1 + (i * 31) % 60;
        let weight = 1 + i % 3;
        fill(&mut c, P, &lane, (8_000 / cost) as usize + 50);
        c.ok(&["EMQ.WEIGHT", P, &lane, &weight.to_string()]);
        costs.insert(lane.clone(), cost);
        weights.insert(lane, weight as f64);
    }
    let s = shares(&work(&server, 8, Duration::from_secs(10), &costs));
    eprintln!("twenty lanes: shares of worker time {s:?}");
    let all: f64 = weights.values().sum();
    for (lane, w) in &weights {
        let want = w / all;
        let got = s.get(lane).copied().unwrap_or(0.0);
        assert!(
            (got - want).abs() <= 0.2 * want,
            "{lane} (weight {w}, {} ms): {got:.4} of the time, want {want:.4} ± 20%",
            costs[lane]
        );
    }
}

/// A lane in debt is passed over but stays in the ring; a claim passes at
/// most emq.max-passes lanes, and then serves the next lane that can serve.
#[test]
fn a_lane_in_debt_is_passed_over_and_stays_in_the_ring() {
    let server = Server::start();
    let mut c = server.conn();
    c.ok(&["EMQ.POLICY", P, "fairness", "time", "QUANTUM", "10"]);
    for lane in ["a", "b", "c"] {
        fill(&mut c, P, lane, 10);
    }
    c.ok(&["HSET", &format!("{P}gcredit"), "a", "-1000000", "b", "-1000000"]);
    let got = served(&c.ok(&["EMQ.WCLAIM", P, "60000"]));
    assert_eq!(got[0].3, "c", "a and b in debt: passed over, c served");
    assert_eq!(
        c.ok(&["LRANGE", &format!("{P}ring"), "0", "-1"]).texts(),
        ["a", "b", "c"],
        "passed lanes stay in the ring, rotated"
    );
    // Each pass topped the lane up by weight × quantum (10 ms).
    assert_eq!(
        hget(&mut c, &format!("{P}gcredit"), "a").as_deref(),
        Some("-990000")
    );
    assert_eq!(support::emq_stat(&mut c, "lanes_passed"), 2);
    // Every lane in debt: at most emq.max-passes passes, then one serves;
    // and a lane met again after a whole rotation serves.
    c.ok(&["HSET", &format!("{P}gcredit"), "c", "-1000000"]);
    for (max, passes) in [(2, 2), (64, 3)] {
        c.ok(&["CONFIG", "SET", "emq.max-passes", &max.to_string()]);
        let before = support::emq_stat(&mut c, "lanes_passed");
        let got = served(&c.ok(&["EMQ.WCLAIM", P, "60000"]));
        assert_eq!(got.len(), 1, "served anyway: {got:?}");
        assert_eq!(
            support::emq_stat(&mut c, "lanes_passed") - before,
            passes,
            "emq.max-passes {max}"
        );
    }
    // A CLAIM is count-fair under either policy: no pass.
    let before = support::emq_stat(&mut c, "lanes_passed");
    assert_eq!(served(&c.ok(&["EMQ.CLAIM", P, "60000"])).len(), 1);
    assert_eq!(support::emq_stat(&mut c, "lanes_passed"), before);
}

/// The charge at a claim, its correction when the lease ends (from the
/// turn's previous end), the cost moving toward the time used, and the
/// row's stamp, written and removed.
#[test]
fn a_turn_is_charged_at_once_and_corrected_when_its_leases_end() {
    let server = Server::start();
    let mut c = server.conn();
    c.ok(&["EMQ.POLICY", P, "fairness", "time", "QUANTUM", "100"]);
    fill(&mut c, P, "a", 10);
    c.ok(&["HSET", &format!("{P}gcost"), "a", "30000"]);
    // Weight 1, quantum 100 ms: 100,000 µs; a cost of 30 ms: K = 3.
    let turn = served(&c.ok(&["EMQ.WCLAIM", P, "60000"]));
    assert_eq!(turn.len(), 3);
    let credit = |c: &mut Conn| {
        hget(c, &format!("{P}gcredit"), "a")
            .unwrap()
            .parse::<i64>()
            .unwrap()
    };
    assert_eq!(credit(&mut c), 10_000, "charged 3 × 30 ms at once");
    let row = |c: &mut Conn, f: &str| support::fixtures::row(c, P, &turn[0].0, f);
    assert_eq!(row(&mut c, "charged").as_deref(), Some("30000"));
    assert!(row(&mut c, "claimed").is_some());
    thread::sleep(Duration::from_millis(50));
    c.ok(&["EMQ.COMPLETE", P, &turn[0].0, "1"]);
    let after_one = credit(&mut c);
    // Used about 50 ms, charged 30: about 20 ms more debt.
    assert!((-30_000..=-5_000).contains(&(after_one - 10_000)), "{after_one}");
    thread::sleep(Duration::from_millis(10));
    c.ok(&["EMQ.RETRY", P, &turn[1].0, "1", "60000", "5", "later"]);
    let after_two = credit(&mut c);
    // From the previous end: about 10 ms used, 30 charged: about 20 given back.
    assert!(
        (10_000..=25_000).contains(&(after_two - after_one)),
        "{after_one} -> {after_two}"
    );
    assert_eq!(
        support::fixtures::row(&mut c, P, &turn[1].0, "charged"),
        None,
        "the stamp goes"
    );
    let cost = hget(&mut c, &format!("{P}gcost"), "a")
        .unwrap()
        .parse::<i64>()
        .unwrap();
    // The cost moved an eighth of the way toward each lease's time used,
    // which the credit's two corrections show (so the check holds whatever
    // the sleeps took: with about 50 then 10 ms it ends just under 30,000,
    // a millisecond more and just over).
    let used_one = 30_000 + 10_000 - after_one;
    let used_two = 30_000 + after_one - after_two;
    let toward = |cost: i64, used: i64| cost + (used - cost) / 8;
    assert_eq!(
        cost,
        toward(toward(30_000, used_one), used_two),
        "the cost moved toward the time used ({used_one}, then {used_two} µs)"
    );
    let lane = c.ok(&["EMQ.LANE", P, "a"]);
    assert_eq!(lane.field("cost").unwrap().int(), cost);
    assert_eq!(lane.field("credit").unwrap().int(), after_two);
}

/// A damaged lane beside one deep in debt: the claim passes the one,
/// skips the other, and serves the passed lane when it meets it again (a
/// whole rotation served nothing) — polling and waiting claims alike.
#[test]
fn a_damaged_lane_never_leaves_a_claim_empty_under_fairness_by_time() {
    let server = Server::start();
    let mut c = server.conn();
    c.ok(&["EMQ.POLICY", P, "fairness", "time", "QUANTUM", "1"]);
    c.ok(&["EMQ.ENQUEUE", P, "a", "JOB-a1", "x"]);
    for i in 0..9 {
        let lane = format!("d{i}");
        c.ok(&["EMQ.ENQUEUE", P, &lane, &format!("JOB-{lane}"), "x"]);
        c.ok(&["HSET", &format!("{P}gcredit"), &lane, "garbage"]);
    }
    c.ok(&["HSET", &format!("{P}gcredit"), "a", "-1000000000000000"]);
    let got = served(&c.ok(&["EMQ.WCLAIM", P, "1000"]));
    assert_eq!(got.first().map(|j| j.0.as_str()), Some("JOB-a1"), "{got:?}");
    // A waiting claim, woken by an enqueue into the indebted lane.
    let waiter = server.call_in_thread(&["EMQ.WCLAIM", P, "1000", "BLOCK", "5000"]);
    support::wait_for("the waiter", || support::emq_stat(&mut c, "blocked_clients") == 1);
    c.ok(&["EMQ.ENQUEUE", P, "a", "JOB-a2", "x"]);
    let got = served(&waiter.join().unwrap().unwrap());
    assert_eq!(got.first().map(|j| j.0.as_str()), Some("JOB-a2"), "{got:?}");
}

/// A lease's end removes the row's stamp whatever it holds: with the lane's
/// credit damaged (nothing corrected), or the stamp itself damaged.
#[test]
fn a_leases_end_removes_a_stamp_it_cannot_correct_from() {
    let server = Server::start();
    let mut c = server.conn();
    c.ok(&["CONFIG", "SET", "emq.reap-on-claim", "0"]);
    c.ok(&["EMQ.POLICY", P, "fairness", "time", "QUANTUM", "100"]);
    fill(&mut c, P, "a", 3);
    c.ok(&["HSET", &format!("{P}gcost"), "a", "1000"]);
    let jobs = served(&c.ok(&["EMQ.BCLAIM", P, "100000"]));
    assert_eq!(jobs.len(), 3);
    let row = |c: &mut Conn, j: &str, f: &str| support::fixtures::row(c, P, j, f);
    c.ok(&["HSET", &format!("{P}gcredit"), "a", "zz"]);
    c.ok(&["EMQ.RETRY", P, &jobs[0].0, "1", "0", "5", "e"]);
    assert_eq!(
        (
            row(&mut c, &jobs[0].0, "claimed"),
            row(&mut c, &jobs[0].0, "charged")
        ),
        (None, None)
    );
    assert_eq!(
        hget(&mut c, &format!("{P}gcredit"), "a").as_deref(),
        Some("zz"),
        "left as it is"
    );
    c.ok(&["HSET", &format!("{P}gcredit"), "a", "0"]);
    c.ok(&["HSET", &format!("{P}job:{}", jobs[1].0), "charged", "garbage"]);
    c.ok(&["EMQ.DELAY", P, &jobs[1].0, "1", "IN", "60000"]);
    assert_eq!(
        (
            row(&mut c, &jobs[1].0, "claimed"),
            row(&mut c, &jobs[1].0, "charged")
        ),
        (None, None)
    );
    c.ok(&["HDEL", &format!("{P}job:{}", jobs[2].0), "claimed"]);
    assert_eq!(
        c.ok(&["EMQ.RETRY", P, &jobs[2].0, "1", "0", "1", "e"]).text(),
        "dead"
    );
    assert_eq!(row(&mut c, &jobs[2].0, "charged"), None);
    assert_eq!(
        hget(&mut c, &format!("{P}gcredit"), "a").as_deref(),
        Some("0"),
        "damaged stamps correct nothing"
    );
}

#[test]
fn bad_policy_input_is_refused_and_changes_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "a", 1);
    let before = digest(&mut c);
    for (args, err) in [
        (&["fairness", "fast"][..], "ERR fairness must be time or count"),
        (
            &["fairness", "time", "QUANTUM", "0"],
            "ERR QUANTUM must be an integer from 1 to 2147483648",
        ),
        (
            &["fairness", "time", "QUANTUM", "x"],
            "ERR QUANTUM must be an integer from 1 to 2147483648",
        ),
        (
            &["fairness", "time", "QUANTUM", "2147483649"],
            "ERR QUANTUM must be an integer from 1 to 2147483648",
        ),
        (&["fairness", "time", "QUANTUM"], "ERR syntax error"),
        (&["fairness", "count", "extra"], "ERR syntax error"),
        (
            &["speed", "time"],
            "ERR the policy setting must be max-stalled or fairness",
        ),
    ] {
        let mut full = vec!["EMQ.POLICY", P];
        full.extend_from_slice(args);
        assert_eq!(c.cmd(&full).unwrap_err(), err, "{args:?}");
    }
    assert_eq!(digest(&mut c), before);
    // A damaged policy is the claim's error; a damaged credit skips the lane.
    c.ok(&["HSET", &format!("{P}meta"), "fairness", "fast"]);
    let e = c.cmd(&["EMQ.WCLAIM", P, "60000"]).unwrap_err();
    assert!(e.contains("'fairness'"), "{e}");
    c.ok(&["EMQ.POLICY", P, "fairness", "time"]);
    c.ok(&["HSET", &format!("{P}gcredit"), "a", "lots"]);
    assert_eq!(c.ok(&["EMQ.WCLAIM", P, "60000"]), Value::Array(vec![]));
    assert!(support::emq_stat(&mut c, "lanes_skipped") >= 1);
    c.ok(&["EMQ.POLICY", P, "fairness", "count"]);
    assert_eq!(
        served(&c.ok(&["EMQ.WCLAIM", P, "60000"])).len(),
        1,
        "count: credit not read"
    );
}

/// The policy on, a replica and an AOF reload reach the primary's digest in
/// both replication modes.
#[test]
fn replicas_and_the_aof_follow_fairness_by_time() {
    for mode in ["effects", "command"] {
        replicated_and_persisted(&["--emq.replicate", mode], true, |_, c| {
            c.ok(&["EMQ.POLICY", P, "fairness", "time", "QUANTUM", "5"]);
            for lane in ["a", "b"] {
                fill(c, P, lane, 30);
            }
            c.ok(&["EMQ.WEIGHT", P, "b", "2"]);
            c.ok(&["HSET", &format!("{P}gcredit"), "a", "-20000"]);
            for i in 0..12 {
                for (job, _, token, _) in served(&c.ok(&["EMQ.BCLAIM", P, "60000"])) {
                    thread::sleep(Duration::from_millis(1));
                    match i % 3 {
                        0 => c.ok(&["EMQ.COMPLETE", P, &job, &token.to_string()]),
                        1 => c.ok(&["EMQ.RETRY", P, &job, &token.to_string(), "0", "5", "e"]),
                        _ => c.ok(&["EMQ.DELAY", P, &job, &token.to_string(), "IN", "0"]),
                    };
                }
                c.ok(&["EMQ.PROMOTE", P]);
            }
            // Leases left to expire, returned by REAP.
            served(&c.ok(&["EMQ.WCLAIM", P, "1"]));
            thread::sleep(Duration::from_millis(20));
            c.ok(&["EMQ.REAP", P]);
            assert!(
                c.int(&["EXISTS", &format!("{P}gcost")]) == 1,
                "{mode}: costs moved"
            );
        });
    }
}
