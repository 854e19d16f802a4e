//! Fairness as EchoMQ's weighted share defines it: weights give exact shares
//! over full rotations, a ceiling is never passed whatever the number of
//! concurrent claimers, and under sustained skew every lane drains.

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Arc;
use std::thread;

use support::fixtures::{fill, served};
use support::{Server, Value};

const P: &str = "fair{q}:";

#[test]
fn weights_1_2_3_5_give_exact_shares_over_full_turns() {
    let server = Server::start();
    let mut c = server.conn();
    for (lane, w) in [("a", "1"), ("b", "2"), ("c", "3"), ("d", "5")] {
        fill(&mut c, P, lane, 600);
        c.ok(&["EMQ.WEIGHT", P, lane, w]);
    }
    let mut got: BTreeMap<String, usize> = BTreeMap::new();
    // 100 rotations of four lanes: 400 turns.
    for _ in 0..400 {
        for (_, _, _, lane) in served(&c.ok(&["EMQ.WCLAIM", P, "600000"])) {
            *got.entry(lane).or_default() += 1;
        }
    }
    let shares: Vec<usize> = ["a", "b", "c", "d"].iter().map(|l| got[*l]).collect();
    assert_eq!(shares, [100, 200, 300, 500]);
}

#[test]
fn sixteen_concurrent_claimers_never_take_a_lane_past_its_ceiling() {
    let server = Server::start();
    let mut c = server.conn();
    let limits = [("a", 1i64), ("b", 2), ("c", 3), ("d", 5)];
    for (lane, limit) in limits {
        fill(&mut c, P, lane, 300);
        c.ok(&["EMQ.LIMIT", P, lane, &limit.to_string()]);
        c.ok(&["EMQ.WEIGHT", P, lane, "4"]);
    }
    // What the workers hold right now, per lane, and the most ever held.
    let holding: Arc<BTreeMap<&str, (AtomicI64, AtomicI64)>> = Arc::new(
        limits
            .iter()
            .map(|(l, _)| (*l, (AtomicI64::new(0), AtomicI64::new(0))))
            .collect(),
    );
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..16)
        .map(|i| {
            let mut w = server.conn();
            let (holding, stop) = (holding.clone(), stop.clone());
            let verb = ["EMQ.CLAIM", "EMQ.WCLAIM", "EMQ.BCLAIM"][i % 3];
            thread::spawn(move || {
                let mut done = 0;
                while !stop.load(Ordering::Relaxed) {
                    let reply = w.ok(&[verb, P, "600000", "BLOCK", "200"]);
                    if reply == Value::Nil {
                        break;
                    }
                    let jobs = served(&reply);
                    for (_, _, _, lane) in &jobs {
                        let (now, max) = &holding[lane.as_str()];
                        let held = now.fetch_add(1, Ordering::SeqCst) + 1;
                        max.fetch_max(held, Ordering::SeqCst);
                    }
                    thread::yield_now();
                    for (job, _, token, lane) in &jobs {
                        holding[lane.as_str()].0.fetch_sub(1, Ordering::SeqCst);
                        assert_eq!(w.int(&["EMQ.COMPLETE", P, job, &token.to_string()]), 1);
                        done += 1;
                    }
                }
                done
            })
        })
        .collect();
    let done: usize = workers.into_iter().map(|w| w.join().unwrap()).sum();
    stop.store(true, Ordering::Relaxed);
    assert_eq!(done, 1200, "every job done once");
    for (lane, limit) in limits {
        let max = holding[lane].1.load(Ordering::SeqCst);
        assert!(max <= limit, "lane {lane}: {max} held at once, ceiling {limit}");
        assert!(max >= 1);
    }
}

#[test]
fn under_sustained_skew_every_lane_drains() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "huge", 2_000);
    c.ok(&["EMQ.WEIGHT", P, "huge", "8"]);
    for lane in ["s1", "s2", "s3"] {
        fill(&mut c, P, lane, 20);
    }
    let mut served_small = 0;
    let mut turns = 0;
    let mut extra = 0;
    while served_small < 60 {
        turns += 1;
        assert!(
            turns < 500,
            "the small lanes starved: {served_small} of 60 after {turns} turns"
        );
        for (job, _, token, lane) in served(&c.ok(&["EMQ.WCLAIM", P, "600000"])) {
            served_small += usize::from(lane != "huge");
            c.int(&["EMQ.COMPLETE", P, &job, &token.to_string()]);
        }
        // The producer of the big lane never stops.
        extra += 1;
        c.ok(&["EMQ.ENQUEUE", P, "huge", &format!("JOB-x{extra:06}"), "x"]);
    }
    // Each small lane gets a turn per rotation: 20 rotations of 4 lanes.
    assert!(turns <= 90, "{turns} turns to drain the small lanes");
    for lane in ["s1", "s2", "s3"] {
        assert_eq!(
            c.int(&["EXISTS", &format!("{P}g:{lane}:pending")]),
            0,
            "{lane} drained"
        );
    }
}
