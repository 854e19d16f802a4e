//! Rates and timed pauses (docs/commands.md, "Rates and timed pauses"): a
//! rated lane starts no more jobs than its GCRA bound under any number of
//! claimers while the others are served as before; a lane paused for a while
//! comes back by itself to blocking and polling workers; both are visible to
//! an operator, refuse bad input without a change, treat damaged state as
//! lane damage, and reach a replica and the AOF.

mod support;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use support::fixtures::{fill, now_ms, ring, served, zscore};
use support::replication::{digest, replicated_and_persisted};
use support::{emq_stat, wait_for, Conn, Server, Value};

const P: &str = "rt{q}:";
/// Long enough that no lease of a test ends while it runs.
const LEASE: i64 = 600_000;

fn field(v: &Value, name: &str) -> Value {
    v.field(name)
        .unwrap_or_else(|| panic!("no field {name} in {}", v.render()))
        .clone()
}

/// Every start (server ms) of a job of `lane` leased under `LEASE`, sorted:
/// its deadline in `P active` less the lease.
fn starts(c: &mut Conn, lane: &str) -> Vec<i64> {
    let all = c
        .ok(&["ZRANGE", &format!("{P}active"), "0", "-1", "WITHSCORES"])
        .texts();
    let mut starts: Vec<i64> = all
        .chunks(2)
        .filter(|p| p[0].starts_with(&format!("JOB-{lane}-")))
        .map(|p| p[1].parse::<f64>().unwrap() as i64 - LEASE)
        .collect();
    starts.sort_unstable();
    starts
}

/// The most starts in any window of `ms` that begins at a start.
fn busiest(starts: &[i64], ms: i64) -> usize {
    (0..starts.len())
        .map(|i| starts[i..].iter().take_while(|&&t| t < starts[i] + ms).count())
        .max()
        .unwrap_or(0)
}

/// 16 clients run WCLAIM for `secs` on lanes a and b (weight 1) and r
/// (weight 3); the jobs each lane was served.
fn claim_for(server: &Server, secs: u64) -> BTreeMap<String, usize> {
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..16)
        .map(|_| {
            let mut c = server.conn();
            let stop = stop.clone();
            thread::spawn(move || {
                let mut got: BTreeMap<String, usize> = BTreeMap::new();
                while !stop.load(Ordering::Relaxed) {
                    for job in served(&c.ok(&["EMQ.WCLAIM", P, &LEASE.to_string()])) {
                        *got.entry(job.3).or_default() += 1;
                    }
                    // Paced, so that no lane runs dry in the run.
                    thread::sleep(Duration::from_millis(1));
                }
                got
            })
        })
        .collect();
    thread::sleep(Duration::from_secs(secs));
    stop.store(true, Ordering::Relaxed);
    let mut total: BTreeMap<String, usize> = BTreeMap::new();
    for w in workers {
        for (lane, n) in w.join().unwrap() {
            *total.entry(lane).or_default() += n;
        }
    }
    total
}

fn three_lanes(c: &mut Conn) {
    for lane in ["a", "b", "r"] {
        fill(c, P, lane, 50_000);
    }
    c.ok(&["EMQ.WEIGHT", P, "r", "3"]);
}

#[test]
fn a_rated_lane_keeps_its_bound_under_sixteen_claimers_and_costs_the_others_nothing() {
    // The run with no rate: the unthrottled lanes' shares to compare with.
    let plain = Server::start();
    three_lanes(&mut plain.conn());
    let without = claim_for(&plain, 3);
    drop(plain);

    let server = Server::start();
    let mut c = server.conn();
    three_lanes(&mut c);
    assert_eq!(
        c.ok(&["EMQ.RATE", P, "r", "20", "1000", "BURST", "5"]).text(),
        "OK"
    );
    let began = now_ms(&mut c);
    let with = claim_for(&server, 3);
    let ended = now_ms(&mut c);

    let r = starts(&mut c, "r");
    assert_eq!(r.len(), with["r"], "every start of r is in P active");
    for window in [250, 500, 1000] {
        let bound = 5 + 20 * window as usize / 1000 + 1;
        let most = busiest(&r, window);
        assert!(most <= bound, "{most} starts of r in {window} ms, bound {bound}");
    }
    // Not starved either: its burst and most of 20 a second.
    let secs = (ended - began) as f64 / 1000.0;
    assert!(
        r.len() as f64 >= 5.0 + 20.0 * (secs - 1.0),
        "r started {} jobs in {secs:.1} s",
        r.len()
    );
    // The others: a throttled head never costs them a turn, and a and b
    // share the turns as they did with no rate set.
    let others = |m: &BTreeMap<String, usize>| (m["a"] + m["b"]) as f64;
    assert!(
        others(&with) >= 0.9 * others(&without),
        "a and b served as fast as without a rate: {with:?}, without: {without:?}"
    );
    assert_eq!(emq_stat(&mut c, "claims_empty"), 0, "no claim came back empty");
    let share = |m: &BTreeMap<String, usize>| m["a"] as f64 / (m["a"] + m["b"]) as f64;
    let (was, is) = (share(&without), share(&with));
    assert!(
        (is - was).abs() <= 0.1 * was,
        "a's share of a and b: {is:.3} with r rated, {was:.3} without"
    );
    assert!(
        emq_stat(&mut c, "lanes_throttled") >= 1 && emq_stat(&mut c, "lanes_returned") >= 1,
        "r left the ring throttled and came back"
    );
}

#[test]
fn a_throttled_lane_rung_by_a_script_is_dropped_and_enqueue_does_not_ring_it() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "a", 5);
    fill(&mut c, P, "r", 5);
    c.ok(&["EMQ.RATE", P, "r", "1", "60000", "BURST", "1"]);
    assert_eq!(ring(&mut c, P), ["a", "r"]);
    assert_eq!(served(&c.ok(&["EMQ.CLAIM", P, "1000"]))[0].3, "a");
    assert_eq!(served(&c.ok(&["EMQ.CLAIM", P, "1000"]))[0].3, "r");
    assert_eq!(ring(&mut c, P), ["a"], "r left the ring throttled");
    let until = zscore(&mut c, &format!("{P}gnext"), "r").expect("r waits in P gnext");
    let now = now_ms(&mut c);
    assert!(
        (now + 59_000..=now + 60_001).contains(&until),
        "until {until}, now {now}"
    );
    // A native ENQUEUE knows: r stays out.
    fill(&mut c, P, "r2", 1);
    c.ok(&["EMQ.ENQUEUE", P, "r", "JOB-r-late", "x"]);
    assert!(!ring(&mut c, P).contains(&"r".to_string()));
    // A script that rings it does not: the first claim meeting it drops it.
    c.ok(&["RPUSH", &format!("{P}ring"), "r"]);
    assert_eq!(ring(&mut c, P), ["a", "r2", "r"]);
    assert_eq!(served(&c.ok(&["EMQ.CLAIM", P, "1000"]))[0].3, "a");
    assert_eq!(served(&c.ok(&["EMQ.CLAIM", P, "1000"]))[0].3, "r2");
    assert_eq!(
        c.ok(&["EMQ.CLAIM", P, "1000"]),
        Value::Array(vec![]),
        "r met throttled"
    );
    assert_eq!(ring(&mut c, P), ["a"]);
    assert_eq!(zscore(&mut c, &format!("{P}gnext"), "r"), Some(until));
    // RATE NONE frees it: rung at once.
    c.ok(&["EMQ.RATE", P, "r", "NONE"]);
    assert_eq!(ring(&mut c, P), ["a", "r"]);
    assert_eq!(zscore(&mut c, &format!("{P}gnext"), "r"), None);
    assert_eq!(c.int(&["EXISTS", &format!("{P}grate"), &format!("{P}gtat")]), 0);
}

#[test]
fn a_lane_paused_for_a_while_comes_back_by_itself_to_a_waiting_worker() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "p", 3);
    let paused_at = now_ms(&mut c);
    c.ok(&["EMQ.PAUSE", P, "p", "FOR", "300"]);
    assert!(ring(&mut c, P).is_empty());
    let waiter = server.call_in_thread(&["EMQ.WCLAIM", P, &LEASE.to_string(), "BLOCK", "5000"]);
    let jobs = served(&waiter.join().unwrap().unwrap());
    assert_eq!(jobs.len(), 1, "served with nobody calling RESUME");
    let start = starts(&mut c, "p")[0];
    let late = start - (paused_at + 300);
    let tolerance = 250 * i64::from(support::server::slow());
    assert!(
        (0..tolerance).contains(&late),
        "served {late} ms after the pause's end"
    );
    assert_eq!(c.int(&["SISMEMBER", &format!("{P}paused"), "p"]), 0, "resumed");
    assert_eq!(c.int(&["EXISTS", &format!("{P}gnext")]), 0);
    assert!(emq_stat(&mut c, "lanes_returned") >= 1);
}

#[test]
fn a_lane_paused_for_a_while_comes_back_by_itself_to_a_polling_worker() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "p", 3);
    let paused_at = now_ms(&mut c);
    c.ok(&["EMQ.PAUSE", P, "p", "FOR", "300"]);
    let asked = Instant::now();
    let mut polls = 0;
    let jobs = loop {
        let jobs = served(&c.ok(&["EMQ.CLAIM", P, &LEASE.to_string()]));
        if !jobs.is_empty() {
            break jobs;
        }
        polls += 1;
        assert!(asked.elapsed() < Duration::from_secs(10), "never served");
        thread::sleep(Duration::from_millis(5));
    };
    assert_eq!(jobs[0].3, "p");
    assert!(polls > 10, "it waited out its pause ({polls} empty polls)");
    let late = starts(&mut c, "p")[0] - (paused_at + 300);
    let tolerance = 100 * i64::from(support::server::slow());
    assert!(
        (0..tolerance).contains(&late),
        "served {late} ms after the pause's end"
    );
}

#[test]
fn resume_ends_a_timed_pause_at_once_and_a_plain_pause_cancels_it() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "p", 3);
    fill(&mut c, P, "q", 3);
    c.ok(&["EMQ.PAUSE", P, "p", "FOR", "60000"]);
    c.ok(&["EMQ.RESUME", P, "p"]);
    assert_eq!(ring(&mut c, P), ["q", "p"]);
    assert_eq!(
        zscore(&mut c, &format!("{P}gnext"), "p"),
        None,
        "the timed resume cancelled"
    );
    c.ok(&["EMQ.PAUSE", P, "q", "FOR", "200"]);
    c.ok(&["EMQ.PAUSE", P, "q"]);
    assert_eq!(zscore(&mut c, &format!("{P}gnext"), "q"), None);
    let waiter = server.call_in_thread(&["EMQ.CLAIM", P, "1000", "BLOCK", "600"]);
    assert_eq!(served(&waiter.join().unwrap().unwrap())[0].3, "p");
    thread::sleep(Duration::from_millis(400));
    for _ in 0..3 {
        let got = served(&c.ok(&["EMQ.CLAIM", P, "1000"]));
        assert!(got.iter().all(|j| j.3 == "p"), "q stays paused: {got:?}");
    }
    let lane = c.ok(&["EMQ.LANE", P, "q"]);
    assert_eq!(field(&lane, "paused"), Value::Int(1));
    assert_eq!(field(&lane, "paused_until"), Value::Nil);
}

/// RESUME of a lane its rate holds back (not paused) leaves its wait in
/// `P gnext` as it is: the lane comes back by itself when its rate allows.
/// (It used to drop the wait without ringing the lane: stranded until
/// EMQ.REPAIR.)
#[test]
fn resume_of_a_throttled_lane_leaves_it_to_come_back_by_itself() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "a", 2);
    c.ok(&["EMQ.RATE", P, "a", "1", "300", "BURST", "1"]);
    assert_eq!(served(&c.ok(&["EMQ.CLAIM", P, "60000"])).len(), 1);
    let at = zscore(&mut c, &format!("{P}gnext"), "a").expect("a waits for its rate");
    c.ok(&["EMQ.RESUME", P, "a"]);
    assert_eq!(
        zscore(&mut c, &format!("{P}gnext"), "a"),
        Some(at),
        "its wait stays"
    );
    wait_for("lane a served again", || {
        !served(&c.ok(&["EMQ.CLAIM", P, "60000"])).is_empty()
    });
    assert!(now_ms(&mut c) >= at, "not before its rate allows");
}

/// Lane a served once under a rate of 1 per 600 ms: the time (ms) its rate
/// next allows a start, as `P gnext` holds it.
fn throttled_a(c: &mut Conn) -> i64 {
    fill(c, P, "a", 2);
    c.ok(&["EMQ.RATE", P, "a", "1", "600", "BURST", "1"]);
    assert_eq!(served(&c.ok(&["EMQ.CLAIM", P, &LEASE.to_string()])).len(), 1);
    zscore(c, &format!("{P}gnext"), "a").expect("a waits for its rate")
}

/// The start of a's second job, checked against its rate: not before it
/// allows, and not much after (the timer's resolution, as a bound).
fn served_when_its_rate_allows(c: &mut Conn, at: i64) {
    let second = starts(c, "a")[1];
    let late = second - at;
    let tolerance = 250 * i64::from(support::server::slow());
    assert!(
        (0..tolerance).contains(&late),
        "a served {late} ms after its rate allowed"
    );
    assert_eq!(c.int(&["SISMEMBER", &format!("{P}paused"), "a"]), 0);
}

/// A pause shorter than the rate's wait ends, and the lane still waits for
/// its rate: then the timer brings it back to a worker blocked all along.
/// (The pause's end used to ring it while throttled: the waiter's wake-up
/// may not write, so it left the lane in the ring and waited out its BLOCK.)
#[test]
fn a_throttled_lane_paused_for_less_than_its_wait_comes_back_at_its_rate_to_a_waiting_worker() {
    let server = Server::start();
    let mut c = server.conn();
    let at = throttled_a(&mut c);
    c.ok(&["EMQ.PAUSE", P, "a", "FOR", "100"]);
    let waiter = server.call_in_thread(&["EMQ.WCLAIM", P, &LEASE.to_string(), "BLOCK", "5000"]);
    let jobs = served(&waiter.join().unwrap().unwrap());
    assert_eq!(jobs.len(), 1, "served, and not by the BLOCK's end");
    served_when_its_rate_allows(&mut c, at);
}

#[test]
fn a_throttled_lane_paused_for_less_than_its_wait_comes_back_at_its_rate_to_a_polling_worker() {
    let server = Server::start();
    let mut c = server.conn();
    let at = throttled_a(&mut c);
    c.ok(&["EMQ.PAUSE", P, "a", "FOR", "100"]);
    let mut ended = false;
    wait_for("lane a served again", || {
        let got = served(&c.ok(&["EMQ.CLAIM", P, &LEASE.to_string()]));
        if !ended && got.is_empty() && now_ms(&mut c) > at - 400 {
            // Its pause is over; it waits for its rate, off the ring.
            ended = true;
            assert!(ring(&mut c, P).is_empty(), "not rung while throttled");
            assert_eq!(zscore(&mut c, &format!("{P}gnext"), "a"), Some(at));
        }
        !got.is_empty()
    });
    assert!(ended, "the pause's end was seen");
    served_when_its_rate_allows(&mut c, at);
}

/// RESUME of a paused lane its rate still holds back, with or without a
/// timed pause: it waits in `P gnext` for its next start, shown throttled,
/// and comes back by itself.
#[test]
fn resume_of_a_paused_lane_its_rate_holds_back_leaves_it_waiting_for_its_rate() {
    for pause in [&["FOR", "60000"][..], &[][..]] {
        let server = Server::start();
        let mut c = server.conn();
        let at = throttled_a(&mut c);
        let mut args = vec!["EMQ.PAUSE", P, "a"];
        args.extend_from_slice(pause);
        c.ok(&args);
        c.ok(&["EMQ.RESUME", P, "a"]);
        assert!(ring(&mut c, P).is_empty(), "{pause:?}: not rung while throttled");
        assert_eq!(zscore(&mut c, &format!("{P}gnext"), "a"), Some(at), "{pause:?}");
        let lane = c.ok(&["EMQ.LANE", P, "a"]);
        assert_eq!(field(&lane, "paused"), Value::Int(0));
        assert_eq!(field(&lane, "throttled"), Value::Int(1));
        assert_eq!(field(&lane, "throttled_until"), Value::Int(at));
        let waiter = server.call_in_thread(&["EMQ.WCLAIM", P, &LEASE.to_string(), "BLOCK", "5000"]);
        assert_eq!(served(&waiter.join().unwrap().unwrap()).len(), 1, "{pause:?}");
        served_when_its_rate_allows(&mut c, at);
    }
}

/// EchoMQ's `@gresume` on `lane` of queue `p`, as its host calls it.
fn echomq_resume(c: &mut Conn, p: &str, lane: &str) {
    let keys = ["paused", "ring", "glimit", "gactive", "wake"].map(|k| format!("{p}{k}"));
    let script = support::twins::source("gresume");
    let mut args = vec!["EVAL", script.as_str(), "5"];
    args.extend(keys.iter().map(String::as_str));
    args.extend([p, lane]);
    c.ok(&args);
}

/// EchoMQ's `@gpause` on `lane` of queue `p`.
fn echomq_pause(c: &mut Conn, p: &str, lane: &str) {
    let script = support::twins::source("gpause");
    c.ok(&[
        "EVAL",
        &script,
        "2",
        &format!("{p}paused"),
        &format!("{p}ring"),
        lane,
    ]);
}

/// EchoMQ's own `@gresume` (rate-unaware) rings lane a, paused while its
/// rate held it back; `P gnext` no longer holds its wait (a plain PAUSE
/// cancels it). A worker blocked before, and one that blocks after, is
/// served when a's rate allows, by the timer. (The wake-up, which may not
/// write, used to keep waiting with a in the ring and nothing to wake it.)
#[test]
fn a_throttled_lane_rung_by_echomqs_resume_script_is_served_at_its_rate_to_waiting_workers() {
    for waiter_first in [true, false] {
        let server = Server::start();
        let mut c = server.conn();
        let at = throttled_a(&mut c);
        c.ok(&["EMQ.PAUSE", P, "a"]);
        assert_eq!(zscore(&mut c, &format!("{P}gnext"), "a"), None);
        let block = || server.call_in_thread(&["EMQ.WCLAIM", P, &LEASE.to_string(), "BLOCK", "5000"]);
        let waiter = waiter_first.then(block);
        if waiter_first {
            wait_for("the worker waits", || emq_stat(&mut c, "blocked_clients") == 1);
        }
        echomq_resume(&mut c, P, "a");
        assert_eq!(ring(&mut c, P), ["a"], "rung by the script");
        let waiter = waiter.unwrap_or_else(block);
        let jobs = served(&waiter.join().unwrap().unwrap());
        assert_eq!(
            jobs.len(),
            1,
            "waiter first {waiter_first}: served, not timed out"
        );
        served_when_its_rate_allows(&mut c, at);
    }
}

/// EchoMQ's own `@gpause` pauses lane a while its rate holds it back, and
/// leaves a's wait in `P gnext`: that is no timed pause. When the wait's
/// time comes (for a worker waiting all along, and for polling ones) a stays
/// paused and its wait goes; EMQ.RESUME brings it back. A throttled lane
/// whose time has passed is no longer counted throttled by EMQ.QUEUE.
#[test]
fn a_lane_echomqs_pause_script_pauses_while_throttled_stays_paused() {
    let server = Server::start();
    let mut c = server.conn();
    let at = throttled_a(&mut c);
    assert_eq!(field(&c.ok(&["EMQ.QUEUE", P]), "throttled"), Value::Int(1));
    echomq_pause(&mut c, P, "a");
    let keys = [format!("{P}paused"), format!("{P}ring")];
    let lane = c.ok(&["EMQ.LANE", P, "a"]);
    assert_eq!(field(&lane, "paused"), Value::Int(1));
    assert_eq!(field(&lane, "paused_until"), Value::Nil, "not a timed pause");
    let queue = c.ok(&["EMQ.QUEUE", P]);
    assert_eq!(field(&queue, "timed_paused"), Value::Int(0));
    assert_eq!(field(&queue, "throttled"), Value::Int(0));
    assert_eq!(field(&queue, "next_return"), Value::Nil, "nothing comes back");
    let waiter = server.call_in_thread(&["EMQ.WCLAIM", P, &LEASE.to_string(), "BLOCK", "1200"]);
    wait_for("a's wait has come", || now_ms(&mut c) > at + 100);
    assert!(
        served(&waiter.join().unwrap().unwrap()).is_empty(),
        "a stays paused"
    );
    for _ in 0..3 {
        assert!(served(&c.ok(&["EMQ.CLAIM", P, &LEASE.to_string()])).is_empty());
    }
    assert_eq!(c.int(&["SISMEMBER", &keys[0], "a"]), 1, "still paused");
    assert_eq!(zscore(&mut c, &format!("{P}gnext"), "a"), None, "its wait gone");
    c.ok(&["EMQ.RESUME", P, "a"]);
    assert_eq!(served(&c.ok(&["EMQ.CLAIM", P, &LEASE.to_string()]))[0].3, "a");
}

/// A new rate for a lane `@gpause` paused while its old rate held it back:
/// the old rate's wait is forgotten, not left to read as a timed pause
/// under the new rate (which would resume the lane by itself).
#[test]
fn a_new_rate_forgets_a_paused_lanes_wait_for_its_old_rate() {
    for new in [&["NONE"][..], &["2", "60000", "BURST", "2"][..]] {
        let server = Server::start();
        let mut c = server.conn();
        throttled_a(&mut c);
        echomq_pause(&mut c, P, "a");
        let mut args = vec!["EMQ.RATE", P, "a"];
        args.extend_from_slice(new);
        c.ok(&args);
        assert_eq!(zscore(&mut c, &format!("{P}gnext"), "a"), None, "{new:?}");
        let lane = c.ok(&["EMQ.LANE", P, "a"]);
        assert_eq!(field(&lane, "paused"), Value::Int(1), "{new:?}");
        assert_eq!(field(&lane, "paused_until"), Value::Nil, "{new:?}");
        assert!(ring(&mut c, P).is_empty(), "{new:?}");
    }
}

/// A new rate carries the starts the lane owes under the old one, not the
/// time: a lane that spent a fast rate's burst of 200 owes 200 starts, so a
/// slow rate with the same burst lets none through at once (keeping the
/// arrival time as a time let 199 more through within a few ms: more than
/// either rate allows in any window).
#[test]
fn a_new_rate_carries_the_starts_owed_not_a_burst_neither_rate_allows() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "a", 600);
    c.ok(&["EMQ.RATE", P, "a", "200", "1000", "BURST", "200"]);
    let started = Instant::now();
    let mut first = 0;
    while first < 200 {
        let got = served(&c.ok(&["EMQ.BCLAIM", P, &LEASE.to_string()])).len();
        assert!(got > 0, "the burst of 200 at once, {first} so far");
        first += got;
    }
    c.ok(&["EMQ.RATE", P, "a", "1", "1000", "BURST", "200"]);
    let more = served(&c.ok(&["EMQ.BCLAIM", P, &LEASE.to_string()])).len();
    // Every start so far fell in a window of `t` ms: the faster rate's
    // bound over it (the slower one's is less) holds.
    let t = started.elapsed().as_millis() as usize + 1;
    assert!(
        first + more <= 200 + t * 200 / 1000 + 1,
        "{first} then {more} in {t} ms"
    );
    // Owed starts are paid at 1 a second: the next within one.
    let lane = c.ok(&["EMQ.LANE", P, "a"]);
    if let Value::Int(until) = field(&lane, "throttled_until") {
        assert!(until <= now_ms(&mut c) + 1001, "{}", lane.render());
    }
    // Back to a fast rate: what is owed, paid at its pace (5 ms a start).
    c.ok(&["EMQ.RATE", P, "a", "200", "1000", "BURST", "200"]);
    let lane = c.ok(&["EMQ.LANE", P, "a"]);
    let until = field(&lane, "throttled_until");
    assert!(
        until == Value::Nil || until.int() <= now_ms(&mut c) + 6,
        "{}",
        lane.render()
    );
    // Spent again, then 1 a minute with a burst of 1: it owes its burst,
    // no more; the next start a minute on, not 200 minutes.
    let mut spent = 0;
    while field(&c.ok(&["EMQ.LANE", P, "a"]), "throttled") == Value::Int(0) {
        spent += served(&c.ok(&["EMQ.BCLAIM", P, &LEASE.to_string()])).len();
        assert!(spent <= 400, "the burst is spent");
    }
    c.ok(&["EMQ.RATE", P, "a", "1", "60000", "BURST", "1"]);
    let lane = c.ok(&["EMQ.LANE", P, "a"]);
    let until = field(&lane, "throttled_until").int();
    let now = now_ms(&mut c);
    assert!(until > now + 59_000 && until <= now + 60_001, "{}", lane.render());
}

/// A rate set while the lane is paused for a while never makes the pause's
/// end read as the new rate's wait (which would leave the lane paused for
/// good): the end moves a ms on. Built over a damaged old rate, whose
/// arrival time is kept as it is, so that the collision can be aimed.
#[test]
fn a_new_rate_never_turns_a_timed_pause_into_a_lasting_one() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "a", 2);
    c.ok(&["EMQ.RATE", P, "a", "1", "3600000", "BURST", "1"]);
    assert_eq!(served(&c.ok(&["EMQ.CLAIM", P, &LEASE.to_string()])).len(), 1);
    c.ok(&["EMQ.PAUSE", P, "a", "FOR", "300"]);
    let next = format!("{P}gnext");
    let end = zscore(&mut c, &next, "a").unwrap();
    let tat: i64 = c.ok(&["HGET", &format!("{P}gtat"), "a"]).text().parse().unwrap();
    c.ok(&["HSET", &format!("{P}grate"), "a", "fast"]);
    // Burst 2: the next start is one interval before the arrival time.
    let period = (tat / 1000 - end).to_string();
    c.ok(&["EMQ.RATE", P, "a", "1", &period, "BURST", "2"]);
    assert_eq!(zscore(&mut c, &next, "a"), Some(end + 1));
    let lane = c.ok(&["EMQ.LANE", P, "a"]);
    assert_eq!(
        field(&lane, "paused_until"),
        Value::Int(end + 1),
        "{}",
        lane.render()
    );
    wait_for("the pause's end", || now_ms(&mut c) > end + 1);
    assert_eq!(
        served(&c.ok(&["EMQ.CLAIM", P, &LEASE.to_string()])).len(),
        1,
        "resumed"
    );
}

/// Without a script: a throttled lane whose wait's time has passed (no
/// claim has met it yet) is counted throttled by neither EMQ.LANE nor
/// EMQ.QUEUE; and a PAUSE FOR that would end exactly at the rate's wait
/// ends a ms later, so it is still read as a timed pause.
#[test]
fn a_wait_passed_is_not_throttled_and_a_timed_pause_never_ends_at_the_rate_wait() {
    let server = Server::start();
    let mut c = server.conn();
    let at = throttled_a(&mut c);
    wait_for("a's wait has passed", || now_ms(&mut c) > at);
    assert_eq!(field(&c.ok(&["EMQ.LANE", P, "a"]), "throttled"), Value::Int(0));
    assert_eq!(field(&c.ok(&["EMQ.QUEUE", P]), "throttled"), Value::Int(0));
    // Served again; now a pause until its next wait's very ms.
    assert_eq!(served(&c.ok(&["EMQ.CLAIM", P, &LEASE.to_string()]))[0].3, "a");
    let wait = zscore(&mut c, &format!("{P}gnext"), "a").unwrap();
    let now = now_ms(&mut c);
    c.ok(&["EMQ.PAUSE", P, "a", "FOR", &(wait - now).to_string()]);
    let end = zscore(&mut c, &format!("{P}gnext"), "a").unwrap();
    // The server's clock may have moved on a ms between the two calls.
    assert!(end > wait, "end {end}, rate wait {wait}");
    assert_eq!(
        field(&c.ok(&["EMQ.LANE", P, "a"]), "paused_until"),
        Value::Int(end)
    );
}

/// EMQ.REPAIR judges a rated lane by its rate: a throttled lane is healthy
/// out of the ring, waiting in `P gnext` at its next start; a wait lost is
/// restored (and the timer armed), a lane rung by a script is taken out, a
/// wait no rate explains is forgotten, and a damaged rate is named with the
/// lane's ring membership left as it is. A timed pause is left alone.
#[test]
fn repair_judges_a_rated_lane_by_its_rate() {
    let server = Server::start();
    let mut c = server.conn();
    let next = format!("{P}gnext");
    fill(&mut c, P, "a", 3);
    fill(&mut c, P, "b", 3);
    c.ok(&["EMQ.RATE", P, "a", "1", "60000", "BURST", "1"]);
    assert_eq!(served(&c.ok(&["EMQ.CLAIM", P, &LEASE.to_string()]))[0].3, "a");
    let at = zscore(&mut c, &next, "a").expect("a waits for its rate");
    let repair = |c: &mut Conn, lane: &str, dry: bool| {
        let mut args = vec!["EMQ.REPAIR", P, lane];
        if dry {
            args.push("DRYRUN");
        }
        c.ok(&args)
    };
    let r = repair(&mut c, "a", true);
    assert_eq!(field(&r, "changed"), Value::Int(0), "healthy: {}", r.render());
    assert_eq!(field(&r, "next_after"), Value::Int(at));

    // Its wait lost: restored, not rung.
    c.ok(&["DEL", &next]);
    let r = repair(&mut c, "a", true);
    assert_eq!(field(&r, "changed"), Value::Int(1));
    assert_eq!(field(&r, "next_before"), Value::Nil);
    assert_eq!(field(&r, "next_after"), Value::Int(at));
    assert_eq!(field(&r, "ringed_after"), Value::Int(0));
    assert_eq!(zscore(&mut c, &next, "a"), None, "a dry run writes nothing");
    repair(&mut c, "a", false);
    assert_eq!(zscore(&mut c, &next, "a"), Some(at));
    assert_eq!(ring(&mut c, P), ["b"]);

    // Rung by a script while throttled: taken out, its wait kept.
    c.ok(&["RPUSH", &format!("{P}ring"), "a"]);
    let r = repair(&mut c, "a", false);
    assert_eq!(
        (field(&r, "ringed_before"), field(&r, "ringed_after")),
        (Value::Int(1), Value::Int(0))
    );
    assert_eq!(ring(&mut c, P), ["b"]);
    assert_eq!(zscore(&mut c, &next, "a"), Some(at));

    // b has no rate: a wait for a time to come is damage, forgotten; b
    // stays in the ring.
    let later = (at + 5_000).to_string();
    c.ok(&["ZADD", &next, &later, "b"]);
    let r = repair(&mut c, "b", false);
    assert_eq!(field(&r, "changed"), Value::Int(1));
    assert_eq!(field(&r, "next_after"), Value::Nil);
    assert_eq!(zscore(&mut c, &next, "b"), None);
    assert_eq!(ring(&mut c, P), ["b"]);

    // A timed pause is no wait of its rate: left as it is.
    c.ok(&["EMQ.PAUSE", P, "b", "FOR", "60000"]);
    let end = zscore(&mut c, &next, "b").unwrap();
    let r = repair(&mut c, "b", false);
    assert_eq!(field(&r, "changed"), Value::Int(0), "{}", r.render());
    assert_eq!(zscore(&mut c, &next, "b"), Some(end));
    c.ok(&["EMQ.RESUME", P, "b"]);

    // A damaged rate: named, a's membership and wait left as they are.
    c.ok(&["HSET", &format!("{P}grate"), "a", "fast"]);
    c.ok(&["RPUSH", &format!("{P}ring"), "a"]);
    let before = digest(&mut c);
    let r = repair(&mut c, "a", false);
    assert!(
        field(&r, "damaged").text().contains("rate of lane 'a'"),
        "{}",
        r.render()
    );
    assert_eq!(field(&r, "changed"), Value::Int(0));
    assert_eq!(digest(&mut c), before, "nothing changed");

    // Mended with a new rate, a second repair finds nothing to do.
    c.ok(&["EMQ.RATE", P, "a", "1", "60000", "BURST", "1"]);
    for lane in ["a", "b"] {
        let r = repair(&mut c, lane, false);
        assert_eq!(field(&r, "changed"), Value::Int(0), "{lane}: {}", r.render());
    }

    // `P grate` or `P gtat` of another type is the queue's damage, not a
    // lane's: refused, as a claim refuses it, with nothing changed.
    c.ok(&["RPUSH", &format!("{P}ring"), "a"]);
    for key in ["grate", "gtat"] {
        let name = format!("{P}{key}");
        c.ok(&["RENAME", &name, "saved"]);
        c.ok(&["SET", &name, "x"]);
        let before = digest(&mut c);
        for lane in ["a", "b"] {
            let err = c.cmd(&["EMQ.REPAIR", P, lane]).unwrap_err();
            assert!(err.starts_with("WRONGTYPE"), "{key} {lane}: {err}");
        }
        assert_eq!(digest(&mut c), before, "{key}: nothing changed");
        c.ok(&["RENAME", "saved", &name]);
    }
    // With no rates at all, a stray `P gtat` is no concern of REPAIR's (nor
    // of a claim's).
    c.ok(&["DEL", &format!("{P}grate"), &format!("{P}gtat")]);
    c.ok(&["SET", &format!("{P}gtat"), "x"]);
    let r = repair(&mut c, "a", false);
    assert_eq!(field(&r, "damaged"), Value::Nil, "{}", r.render());
}

/// A throttled lane whose wait was lost (its `P gnext` entry deleted) is
/// restored by EMQ.REPAIR with the timer armed: a worker blocked all along
/// is served when its rate allows.
#[test]
fn a_wait_repair_restores_brings_the_lane_back_to_a_waiting_worker() {
    let server = Server::start();
    let mut c = server.conn();
    let at = throttled_a(&mut c);
    c.ok(&["DEL", &format!("{P}gnext")]);
    let waiter = server.call_in_thread(&["EMQ.WCLAIM", P, &LEASE.to_string(), "BLOCK", "5000"]);
    wait_for("the worker waits", || emq_stat(&mut c, "blocked_clients") == 1);
    c.ok(&["EMQ.REPAIR", P, "a"]);
    assert_eq!(served(&waiter.join().unwrap().unwrap()).len(), 1);
    served_when_its_rate_allows(&mut c, at);
}

#[test]
fn lane_queue_and_info_show_throttled_and_parked_lanes() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "r", 5);
    fill(&mut c, P, "p", 5);
    c.ok(&["EMQ.RATE", P, "r", "2", "60000"]);
    let lane = c.ok(&["EMQ.LANE", P, "r"]);
    assert_eq!(
        field(&lane, "rate").text(),
        "2 60000 2",
        "the burst defaults to n"
    );
    assert_eq!(field(&lane, "throttled"), Value::Int(0));
    assert_eq!(field(&lane, "throttled_until"), Value::Nil);
    let now = now_ms(&mut c);
    let got = served(&c.ok(&["EMQ.BCLAIM", P, "1000"]));
    assert_eq!((got.len(), got[0].3.as_str()), (2, "r"), "K clamped by the burst");
    let lane = c.ok(&["EMQ.LANE", P, "r"]);
    assert_eq!(field(&lane, "throttled"), Value::Int(1));
    let until = field(&lane, "throttled_until").int();
    assert!(
        (now + 29_000..=now + 31_000).contains(&until),
        "next start {until}, now {now}"
    );
    assert_eq!(field(&lane, "ringed"), Value::Int(0));
    c.ok(&["EMQ.PAUSE", P, "p", "FOR", "5000"]);
    let lane = c.ok(&["EMQ.LANE", P, "p"]);
    let paused_until = field(&lane, "paused_until").int();
    assert!((now + 4_000..=now + 6_000).contains(&paused_until));
    assert_eq!(field(&lane, "rate"), Value::Nil);
    let queue = c.ok(&["EMQ.QUEUE", P]);
    assert_eq!(field(&queue, "throttled"), Value::Int(1));
    assert_eq!(field(&queue, "timed_paused"), Value::Int(1));
    assert_eq!(field(&queue, "next_return"), Value::Int(paused_until));
    assert_eq!(emq_stat(&mut c, "lanes_throttled"), 1);
}

#[test]
fn bad_rates_and_timed_pauses_are_refused_and_change_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "a", 3);
    c.ok(&["EMQ.RATE", P, "a", "5", "1000"]);
    // A lane paused for a while whose ceiling is damaged: RESUME refuses it
    // and its timed pause stays.
    fill(&mut c, P, "b", 1);
    c.ok(&["EMQ.PAUSE", P, "b", "FOR", "60000"]);
    c.ok(&["HSET", &format!("{P}glimit"), "b", "x"]);
    let before = digest(&mut c);
    let n = "ERR n must be an integer from 1 to 1000000000";
    let period = "ERR period must be an integer from 1 to 31536000000";
    let burst = "ERR burst must be an integer from 1 to 1000000000";
    let ms = "ERR ms must be an integer from 1 to 1099511627776";
    let syntax = "ERR syntax error";
    let cases: &[(&[&str], &str)] = &[
        (&["EMQ.RATE", P, "a", "0", "1000"], n),
        (&["EMQ.RATE", P, "a", "-3", "1000"], n),
        (&["EMQ.RATE", P, "a", "2.5", "1000"], n),
        (&["EMQ.RATE", P, "a", "5", "0"], period),
        (&["EMQ.RATE", P, "a", "5", "-1000"], period),
        (&["EMQ.RATE", P, "a", "5", "1.5"], period),
        (&["EMQ.RATE", P, "a", "5", "1000x"], period),
        (&["EMQ.RATE", P, "a", "5", "31536000001"], period),
        (&["EMQ.RATE", P, "a", "5", "1000", "BURST"], syntax),
        (&["EMQ.RATE", P, "a", "5", "1000", "BURST", "0"], burst),
        (&["EMQ.RATE", P, "a", "5", "1000", "BURST", "x"], burst),
        (&["EMQ.RATE", P, "a", "5", "1000", "LIMIT", "2"], syntax),
        (&["EMQ.RATE", P, "a", "NONE", "1000"], n),
        (
            &["EMQ.RATE", P, "", "5", "1000"],
            "ERR the lane must not be empty",
        ),
        (&["EMQ.PAUSE", P, "a", "FOR"], syntax),
        (&["EMQ.PAUSE", P, "a", "FOR", "0"], ms),
        (&["EMQ.PAUSE", P, "a", "FOR", "-5"], ms),
        (&["EMQ.PAUSE", P, "a", "FOR", "soon"], ms),
        (&["EMQ.PAUSE", P, "a", "UNTIL", "5"], syntax),
        (
            &["EMQ.RESUME", P, "b"],
            "ERR limit of lane 'b' in 'rt{q}:glimit' is not an integer",
        ),
        (&["EMQ.PAUSE", P, "a", "FOR", "5", "6"], syntax),
    ];
    for (args, want) in cases {
        assert_eq!(c.cmd(args).unwrap_err(), *want, "{args:?}");
    }
    assert_eq!(digest(&mut c), before, "nothing changed");
    // Not the server's: a key of another type.
    c.ok(&["SET", &format!("{P}gnext"), "x"]);
    let wrong = c.cmd(&["EMQ.PAUSE", P, "a", "FOR", "100"]).unwrap_err();
    assert!(wrong.starts_with("WRONGTYPE"), "{wrong}");
    assert_eq!(
        c.int(&["SISMEMBER", &format!("{P}paused"), "a"]),
        0,
        "not paused either"
    );
}

#[test]
fn damaged_rate_state_skips_its_lane_and_the_others_are_served() {
    for (key, value) in [("grate", "20 per second"), ("gtat", "soon")] {
        let server = Server::start();
        let mut c = server.conn();
        fill(&mut c, P, "r", 5);
        fill(&mut c, P, "a", 5);
        c.ok(&["EMQ.RATE", P, "r", "20", "1000"]);
        c.ok(&["HSET", &format!("{P}{key}"), "r", value]);
        for _ in 0..6 {
            let got = served(&c.ok(&["EMQ.CLAIM", P, "1000"]));
            assert!(got.iter().all(|j| j.3 == "a"), "{key}: {got:?}");
        }
        assert!(emq_stat(&mut c, "lanes_skipped") >= 1);
        assert_eq!(c.int(&["ZCARD", &format!("{P}g:r:pending")]), 5, "r untouched");
        let err = c.cmd(&["EMQ.LANE", P, "r"]).unwrap_err();
        let what = if key == "grate" {
            "rate of lane 'r'"
        } else {
            "arrival time of lane 'r'"
        };
        assert!(err.contains(what) && err.contains(&format!("{P}{key}")), "{err}");
        // Setting a rate mends it.
        c.ok(&["EMQ.RATE", P, "r", "20", "1000"]);
        wait_for("r served again", || {
            served(&c.ok(&["EMQ.CLAIM", P, "1000"]))
                .iter()
                .any(|j| j.3 == "r")
        });
    }
}

/// A paused lane whose rate is damaged: RESUME (which must know whether
/// the rate still holds the lane back) refuses it and changes nothing; when
/// a timed pause ends by itself, the lane is skipped and the others served.
#[test]
fn a_paused_lane_whose_rate_is_damaged_is_refused_resume_and_skipped_when_its_pause_ends() {
    for (key, value, what) in [
        ("grate", "20 per second", "rate of lane 'r'"),
        ("gtat", "soon", "arrival time of lane 'r'"),
    ] {
        let server = Server::start();
        let mut c = server.conn();
        fill(&mut c, P, "r", 3);
        fill(&mut c, P, "a", 8);
        c.ok(&["EMQ.RATE", P, "r", "20", "1000"]);
        c.ok(&["HSET", &format!("{P}{key}"), "r", value]);
        c.ok(&["EMQ.PAUSE", P, "r", "FOR", "150"]);
        let before = digest(&mut c);
        let err = c.cmd(&["EMQ.RESUME", P, "r"]).unwrap_err();
        assert!(err.contains(what) && err.contains(&format!("{P}{key}")), "{err}");
        assert_eq!(digest(&mut c), before, "{key}: nothing changed");
        let end = zscore(&mut c, &format!("{P}gnext"), "r").unwrap();
        wait_for("r's pause ends", || now_ms(&mut c) > end);
        for _ in 0..6 {
            let got = served(&c.ok(&["EMQ.CLAIM", P, "1000"]));
            assert!(got.iter().all(|j| j.3 == "a"), "{key}: {got:?}");
        }
        assert_eq!(c.int(&["SISMEMBER", &format!("{P}paused"), "r"]), 0, "{key}");
        assert!(emq_stat(&mut c, "lanes_skipped") >= 1, "{key}");
        assert_eq!(
            c.int(&["ZCARD", &format!("{P}g:r:pending")]),
            3,
            "{key}: r untouched"
        );
    }
}

/// Rates, throttled turns, timed pauses, the timer's re-rings and wakes, and
/// EchoMQ's own pause and resume scripts beside them, each as a replica and
/// an AOF reload see them.
fn rated_work(server: &Server, c: &mut Conn) {
    // s: throttled, then paused for less than its wait; back at its rate.
    fill(c, P, "s", 2);
    c.ok(&["EMQ.RATE", P, "s", "1", "400", "BURST", "1"]);
    assert_eq!(served(&c.ok(&["EMQ.WCLAIM", P, "60000"]))[0].3, "s");
    c.ok(&["EMQ.PAUSE", P, "s", "FOR", "100"]);
    fill(c, P, "a", 30);
    fill(c, P, "p", 5);
    c.ok(&["EMQ.PAUSE", P, "a"]);
    c.ok(&["EMQ.PAUSE", P, "p", "FOR", "150"]);
    // A waiter served by the timer's re-ring of p.
    let waiter = server.call_in_thread(&["EMQ.WCLAIM", P, "60000", "BLOCK", "5000"]);
    assert_eq!(served(&waiter.join().unwrap().unwrap())[0].3, "p");
    // r: its burst, then throttled and back, again and again, beside a.
    fill(c, P, "r", 30);
    c.ok(&["EMQ.RATE", P, "r", "10", "200", "BURST", "2"]);
    c.ok(&["EMQ.WEIGHT", P, "r", "4"]);
    c.ok(&["EMQ.RESUME", P, "a"]);
    let began = Instant::now();
    while began.elapsed() < Duration::from_millis(600) {
        c.ok(&["EMQ.WCLAIM", P, "60000"]);
        thread::sleep(Duration::from_millis(3));
    }
    assert!(emq_stat(c, "lanes_throttled") >= 2 && emq_stat(c, "lanes_returned") >= 2);
    wait_for("lane s served again", || {
        c.ok(&["EMQ.WCLAIM", P, "60000"]);
        c.int(&["ZCARD", &format!("{P}g:s:pending")]) == 0
    });
    // Queue g, with EchoMQ's own scripts: lane t throttled, its wait
    // cancelled by a plain PAUSE, rung by `@gresume`; a worker waiting all
    // along is served at its rate (the timer wakes it). Lane u throttled,
    // paused by `@gpause`: its wait's time ends no pause.
    let g = "rg{q}:";
    fill(c, g, "t", 2);
    fill(c, g, "u", 2);
    for lane in ["t", "u"] {
        c.ok(&["EMQ.RATE", g, lane, "1", "300", "BURST", "1"]);
    }
    for _ in 0..2 {
        assert_eq!(served(&c.ok(&["EMQ.WCLAIM", g, "60000"])).len(), 1);
    }
    c.ok(&["EMQ.PAUSE", g, "t"]);
    echomq_pause(c, g, "u");
    let waiter = server.call_in_thread(&["EMQ.WCLAIM", g, "60000", "BLOCK", "5000"]);
    wait_for("the worker waits", || emq_stat(c, "blocked_clients") == 1);
    echomq_resume(c, g, "t");
    assert_eq!(served(&waiter.join().unwrap().unwrap())[0].3, "t");
    wait_for("u's wait ends", || {
        assert!(
            served(&c.ok(&["EMQ.WCLAIM", g, "60000"])).is_empty(),
            "u stays paused"
        );
        zscore(c, &format!("{g}gnext"), "u").is_none()
    });
    assert_eq!(c.int(&["SISMEMBER", &format!("{g}paused"), "u"]), 1);
    // Queue z, left as it is for the digest: lane v throttled and enqueued
    // to (not rung, its wait's time then passes with no claim), lane w
    // paused for long. A command replicated as itself must do at a later
    // AOF load what it did here: no clock decides for it.
    let z = "rz{q}:";
    fill(c, z, "v", 1);
    fill(c, z, "w", 1);
    c.ok(&["EMQ.RATE", z, "v", "1", "300", "BURST", "1"]);
    assert_eq!(served(&c.ok(&["EMQ.WCLAIM", z, "60000"]))[0].3, "v");
    c.ok(&["EMQ.ENQUEUE", z, "v", "JOB-v-late", "x"]);
    c.ok(&["EMQ.PAUSE", z, "w", "FOR", "600000"]);
    assert!(!ring(c, z).contains(&"v".to_string()));
    thread::sleep(Duration::from_millis(400));
}

#[test]
fn rate_state_and_returns_reach_a_replica_and_the_aof_as_effects() {
    replicated_and_persisted(&[], false, rated_work);
}

#[test]
fn rate_state_and_returns_reach_a_replica_and_the_aof_under_replicate_command() {
    replicated_and_persisted(&["--emq.replicate", "command"], true, rated_work);
}
