//! `EMQ.CLAIM` / `WCLAIM` / `BCLAIM … BLOCK ms`: a worker waits without
//! polling and is woken when a lane of its queue becomes serviceable (or the
//! queue is resumed); waiters are served in the order they began to wait;
//! a wake-up that serves nothing writes nothing.

mod support;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use support::fixtures::{fill, hset, ring, served};
use support::replication::digest;
use support::snapshot::snapshot;
use support::{emq_stat, info_field, wait_for, Conn, Reply, Server, Value};

const P: &str = "blk{q}:";

fn blocked(c: &mut Conn) -> i64 {
    info_field(c, "clients", "blocked_clients")
        .unwrap()
        .parse()
        .unwrap()
}

/// Sends `args` on `conn` from a thread; the reply and when it came arrive
/// on the channel.
fn blocked_call(mut conn: Conn, args: &[&str]) -> mpsc::Receiver<(Reply, Instant)> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let _ = tx.send((conn.cmd(&argv), Instant::now()));
    });
    rx
}

#[test]
fn a_waiting_worker_wakes_on_enqueue() {
    let server = Server::start();
    let mut c = server.conn();
    for claim in ["EMQ.CLAIM", "EMQ.WCLAIM", "EMQ.BCLAIM"] {
        let rx = blocked_call(server.conn(), &[claim, P, "60000", "BLOCK", "0"]);
        wait_for("the worker waits", || blocked(&mut c) == 1);
        assert_eq!(
            emq_stat(&mut c, "blocked_clients"),
            1,
            "INFO emq counts the waiter"
        );
        let job = format!("JOB-{claim}");
        let enqueued = Instant::now();
        assert_eq!(c.int(&["EMQ.ENQUEUE", P, "a", &job, "x"]), 1);
        let (reply, at) = rx.recv_timeout(Duration::from_secs(5)).expect("woken");
        let jobs = served(&reply.unwrap());
        assert_eq!(jobs[0].0, job, "{claim}");
        assert!(
            at - enqueued < Duration::from_millis(500),
            "woken after {:?}",
            at - enqueued
        );
        assert_eq!(emq_stat(&mut c, "blocked_clients"), 0);
    }
}

#[test]
fn a_ring_push_by_an_echomq_script_wakes_a_waiter() {
    let server = Server::start();
    let mut c = server.conn();
    let twins = support::twins::Twins::load(&mut c);
    let rx = blocked_call(server.conn(), &["EMQ.WCLAIM", P, "60000", "BLOCK", "0"]);
    wait_for("the worker waits", || blocked(&mut c) == 1);
    twins
        .like_native(&mut c, "enqueue", &[P.as_bytes(), b"a", b"JOB1", b"x"])
        .unwrap();
    let (reply, _) = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("woken by the script's RPUSH");
    assert_eq!(served(&reply.unwrap())[0].0, "JOB1");
}

#[test]
fn a_consumer_parked_on_the_wake_list_is_woken_by_a_native_enqueue() {
    let server = Server::start();
    let mut c = server.conn();
    let rx = blocked_call(server.conn(), &["BLPOP", &format!("{P}wake"), "5"]);
    wait_for("BLPOP waits", || blocked(&mut c) == 1);
    c.ok(&["EMQ.ENQUEUE", P, "a", "JOB1", "x"]);
    let (reply, _) = rx.recv_timeout(Duration::from_secs(5)).expect("woken");
    assert_eq!(reply.unwrap().texts(), [format!("{P}wake"), "1".to_string()]);
}

#[test]
fn a_wait_times_out_with_a_null_array() {
    let server = Server::start();
    let mut c = server.conn();
    let start = Instant::now();
    assert_eq!(c.cmd(&["EMQ.CLAIM", P, "1000", "block", "200"]), Ok(Value::Nil));
    let waited = start.elapsed();
    assert!(
        waited >= Duration::from_millis(180) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    assert_eq!(emq_stat(&mut c, "blocked_clients"), 0);
}

#[test]
fn ten_waiters_are_served_in_the_order_they_began_to_wait() {
    let server = Server::start();
    let mut c = server.conn();
    let (tx, rx) = mpsc::channel();
    // Each worker loops: wait, take one job, complete it, wait again.
    for id in 0..10 {
        let mut w = server.conn();
        let tx = tx.clone();
        thread::spawn(move || loop {
            let Ok(reply) = w.cmd(&["EMQ.WCLAIM", P, "60000", "BLOCK", "0"]) else {
                return;
            };
            let jobs = served(&reply);
            for (job, _, token, _) in &jobs {
                assert_eq!(w.int(&["EMQ.COMPLETE", P, job, &token.to_string()]), 1);
            }
            if tx.send((id, jobs)).is_err() {
                return;
            }
        });
        wait_for("the worker queues up", || blocked(&mut c) == id + 1);
    }
    let mut claimed = std::collections::BTreeSet::new();
    for n in 0..100 {
        wait_for("all ten wait", || blocked(&mut c) == 10);
        let job = format!("JOB{n:03}");
        assert_eq!(c.int(&["EMQ.ENQUEUE", P, "lane", &job, "x"]), 1);
        let (id, jobs) = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("a waiter is served");
        assert_eq!(jobs.len(), 1, "one job per wake-up");
        assert_eq!(jobs[0].0, job);
        assert_eq!(id, n % 10, "job {n} went to waiter {id}: not in waiting order");
        assert!(claimed.insert(job), "claimed twice");
    }
    wait_for("all ten wait again", || blocked(&mut c) == 10);
    let left = snapshot(&mut c, P);
    assert!(
        left.keys().all(|k| k == b"wake" || k.starts_with(b"metrics")),
        "every job done: {left:?}"
    );
}

#[test]
fn no_client_waits_while_a_serviceable_lane_exists() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "full", 2);
    fill(&mut c, P, "good", 1);
    c.ok(&["EMQ.LIMIT", P, "full", "1"]);
    c.ok(&["EMQ.CLAIM", P, "60000"]);
    // A stale head (a lane with no jobs) and a full lane in front of a good one.
    c.ok(&["DEL", &format!("{P}ring")]);
    c.ok(&["RPUSH", &format!("{P}ring"), "ghost", "full", "good"]);
    let start = Instant::now();
    let jobs = served(&c.ok(&["EMQ.WCLAIM", P, "1000", "BLOCK", "5000"]));
    assert!(start.elapsed() < Duration::from_secs(1));
    assert_eq!(jobs[0].0, "JOB-good-00001");
    assert!(
        ring(&mut c, P).is_empty(),
        "the lanes that cannot serve left, the served one emptied"
    );
}

#[test]
fn never_blocks_in_multi_or_a_script() {
    let server = Server::start();
    let mut c = server.conn();
    let start = Instant::now();
    let r = c
        .pipeline(&[
            vec![b"MULTI".to_vec()],
            vec![
                b"EMQ.WCLAIM".to_vec(),
                P.as_bytes().to_vec(),
                b"1000".to_vec(),
                b"BLOCK".to_vec(),
                b"0".to_vec(),
            ],
            vec![b"EXEC".to_vec()],
        ])
        .unwrap();
    assert_eq!(
        r[2],
        Ok(Value::Array(vec![Value::Array(vec![])])),
        "the non-blocking reply"
    );
    let script = c.cmd(&[
        "EVAL",
        "return redis.call('EMQ.CLAIM', KEYS[1], '1000', 'BLOCK', '0')",
        "1",
        P,
    ]);
    assert_eq!(script, Ok(Value::Array(vec![])));
    assert!(start.elapsed() < Duration::from_secs(2));
    assert_eq!(blocked(&mut c), 0);
}

#[test]
fn a_killed_or_unblocked_waiter_leaves_nothing_behind() {
    let server = Server::start();
    let mut c = server.conn();
    let mut w = server.conn();
    let id = w.int(&["CLIENT", "ID"]);
    let rx = blocked_call(w, &["EMQ.WCLAIM", P, "1000", "BLOCK", "0"]);
    wait_for("the worker waits", || blocked(&mut c) == 1);
    assert_eq!(c.int(&["CLIENT", "KILL", "ID", &id.to_string()]), 1);
    let _ = rx.recv_timeout(Duration::from_secs(5));
    wait_for("the kill is seen", || blocked(&mut c) == 0);
    assert_eq!(emq_stat(&mut c, "blocked_clients"), 0);
    c.ok(&["EMQ.ENQUEUE", P, "a", "JOB1", "x"]);
    assert_eq!(
        c.int(&["ZCARD", &format!("{P}g:a:pending")]),
        1,
        "nobody claimed for the dead waiter"
    );

    // CLIENT UNBLOCK ends a wait with the timeout reply.
    let mut w2 = server.conn();
    let id2 = w2.int(&["CLIENT", "ID"]);
    let rx = blocked_call(w2, &["EMQ.CLAIM", "other{q}:", "1000", "BLOCK", "0"]);
    wait_for("the second worker waits", || blocked(&mut c) == 1);
    assert_eq!(c.int(&["CLIENT", "UNBLOCK", &id2.to_string()]), 1);
    assert_eq!(rx.recv_timeout(Duration::from_secs(5)).unwrap().0, Ok(Value::Nil));
    assert_eq!(emq_stat(&mut c, "blocked_clients"), 0);
}

#[test]
fn a_complete_that_frees_headroom_wakes_a_waiter() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "a", 2);
    c.ok(&["EMQ.LIMIT", P, "a", "1"]);
    let first = served(&c.ok(&["EMQ.CLAIM", P, "60000"]))[0].clone();
    let rx = blocked_call(server.conn(), &["EMQ.CLAIM", P, "60000", "BLOCK", "0"]);
    wait_for("the worker waits", || blocked(&mut c) == 1);
    assert_eq!(c.int(&["EMQ.COMPLETE", P, &first.0, "1"]), 1);
    let (reply, _) = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("woken by the COMPLETE");
    assert_eq!(served(&reply.unwrap())[0].0, "JOB-a-00002");
}

#[test]
fn a_paused_queue_keeps_its_waiters_waiting_until_resumed() {
    let server = Server::start();
    let mut c = server.conn();
    c.ok(&["EMQ.QPAUSE", P]);
    fill(&mut c, P, "a", 1);
    let rx = blocked_call(server.conn(), &["EMQ.CLAIM", P, "60000", "BLOCK", "0"]);
    wait_for("the worker waits", || blocked(&mut c) == 1);
    fill(&mut c, P, "b", 1);
    thread::sleep(Duration::from_millis(100));
    assert!(rx.try_recv().is_err(), "a ring push while paused serves nothing");
    c.ok(&["EMQ.QRESUME", P]);
    let (reply, _) = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("woken by the resume");
    assert_eq!(served(&reply.unwrap())[0].3, "a");
}

#[test]
fn bad_block_arguments_are_refused() {
    let server = Server::start();
    let mut c = server.conn();
    for (args, expect) in [
        (
            &["EMQ.WCLAIM", P, "1000", "BLOCK", "-1"][..],
            "ERR BLOCK timeout must be an integer >= 0",
        ),
        (
            &["EMQ.WCLAIM", P, "1000", "BLOCK", "x"],
            "ERR BLOCK timeout must be an integer >= 0",
        ),
        (
            &["EMQ.BCLAIM", P, "1000", "BLOCK", "9223372036854775807"],
            "ERR BLOCK timeout is out of range",
        ),
        (&["EMQ.CLAIM", P, "1000", "WAIT", "5"], "ERR syntax error"),
        (&["EMQ.CLAIM", P, "1000", "BLOCK"], "ERR syntax error"),
    ] {
        assert_eq!(c.cmd(args).err().as_deref(), Some(expect), "{args:?}");
    }
}

/// A BLOCK claim that can serve nothing writes nothing (a wake-up that
/// writes and keeps waiting aborts Redis 7.0): lane a heads the ring and
/// cannot be served, lane b after it is damaged (skipped). The claim waits,
/// times out, and the keyspace is as it was; a non-blocking claim then drops a.
#[test]
fn a_blocking_claim_that_can_serve_nothing_writes_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    for (i, verb) in ["EMQ.WCLAIM", "EMQ.CLAIM", "EMQ.BCLAIM"].iter().enumerate() {
        let p = format!("e{i}{{q}}:");
        fill(&mut c, &p, "a", 1);
        fill(&mut c, &p, "b", 1);
        c.ok(&["DEL", &format!("{p}g:a:pending")]);
        hset(&mut c, &format!("{p}glimit"), "b", "many");
        let before = digest(&mut c);
        assert_eq!(
            c.cmd(&[verb, &p, "60000", "BLOCK", "100"]),
            Ok(Value::Nil),
            "{verb}: timed out"
        );
        assert_eq!(digest(&mut c), before, "{verb}: nothing changed");
        assert_eq!(ring(&mut c, &p), ["a", "b"]);
        assert_eq!(
            c.ok(&[verb, &p, "60000"]),
            Value::Array(vec![]),
            "{verb}: a dropped, nothing served"
        );
        assert_eq!(ring(&mut c, &p), ["b"]);
    }
}

/// A lane in the ring that a claim skips (its own numbers are damaged) and
/// an operator then mends — with EMQ.WEIGHT, EMQ.LIMIT or EMQ.REPAIR — wakes
/// the claims waiting on the queue: no ring join happens.
#[test]
fn mending_a_skipped_lane_wakes_the_waiters() {
    let server = Server::start();
    let mut c = server.conn();
    let mends: [(&str, &str, &str, &[&str]); 3] = [
        ("gweight", "abc", "EMQ.WEIGHT", &["1"]),
        ("glimit", "abc", "EMQ.LIMIT", &["NONE"]),
        ("gactive", "-1", "EMQ.REPAIR", &[]),
    ];
    for (i, (hash, bad, mend, rest)) in mends.iter().enumerate() {
        let p = format!("m{i}{{q}}:");
        fill(&mut c, &p, "D", 1);
        hset(&mut c, &format!("{p}{hash}"), "D", bad);
        let waiter = server.call_in_thread(&["EMQ.WCLAIM", &p, "60000", "BLOCK", "5000"]);
        wait_for("the waiter", || emq_stat(&mut c, "blocked_clients") == 1);
        let mut args = vec![*mend, p.as_str(), "D"];
        args.extend(rest.iter());
        assert!(c.cmd(&args).is_ok(), "{mend}");
        let started = Instant::now();
        let jobs = served(&waiter.join().unwrap().unwrap());
        assert_eq!(
            jobs.first().map(|j| j.0.as_str()),
            Some("JOB-D-00001"),
            "{mend} woke the waiter"
        );
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "{mend}: woken, not timed out"
        );
    }
}

/// EMQ.EXTEND that makes a lease shorter: the timer returns it at its new
/// end to a worker already waiting (it was set for the old end).
#[test]
fn a_lease_made_shorter_comes_back_to_a_waiting_worker() {
    let server = Server::start();
    let mut c = server.conn();
    c.ok(&["EMQ.ENQUEUE", P, "X", "JOB-1", "a", "JOB-2", "b"]);
    c.ok(&["EMQ.LIMIT", P, "X", "1"]);
    assert_eq!(served(&c.ok(&["EMQ.CLAIM", P, "60000"]))[0].0, "JOB-1");
    let waiter = server.call_in_thread(&["EMQ.WCLAIM", P, "60000", "BLOCK", "5000"]);
    wait_for("the waiter", || emq_stat(&mut c, "blocked_clients") == 1);
    let started = Instant::now();
    assert_eq!(c.int(&["EMQ.EXTEND", P, "JOB-1", "1", "100"]), 1);
    let jobs = served(&waiter.join().unwrap().unwrap());
    assert_eq!(
        jobs.first().map(|j| j.0.as_str()),
        Some("JOB-1"),
        "the lease came back"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "not at the BLOCK's end"
    );
}

/// A wake-up that returns an expired lease first (one the timer did not
/// know of: a script's, or moved by hand) whose row is damaged: the job heads
/// its lane again and the lane is skipped, so nothing is served after a
/// write. The waiter gets an empty claim rather than waiting on (a wake-up
/// that writes and keeps waiting aborted Redis 7.0 with AOF on).
#[test]
fn a_wake_up_that_wrote_and_serves_nothing_ends_the_wait_empty() {
    let mut server = Server::start_with(&["--appendonly", "yes"]);
    let mut c = server.conn();
    c.ok(&["EMQ.ENQUEUE", P, "X", "JOB-1", "a"]);
    assert_eq!(served(&c.ok(&["EMQ.CLAIM", P, "60000"]))[0].0, "JOB-1");
    let waiter = server.call_in_thread(&["EMQ.WCLAIM", P, "60000", "BLOCK", "5000"]);
    wait_for("the waiter", || emq_stat(&mut c, "blocked_clients") == 1);
    c.ok(&["ZADD", &format!("{P}active"), "XX", "1", "JOB-1"]);
    c.ok(&["HSET", &format!("{P}job:JOB-1"), "attempts", "x"]);
    let started = Instant::now();
    c.ok(&["EMQ.ENQUEUE", P, "X", "JOB-2", "b"]);
    assert_eq!(waiter.join().unwrap(), Ok(Value::Array(vec![])), "an empty claim");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "not at the BLOCK's end"
    );
    assert!(server.alive(), "the server is up");
    assert_eq!(
        c.ok(&["ZSCORE", &format!("{P}active"), "JOB-1"]),
        Value::Nil,
        "the lease went back"
    );
    assert_eq!(emq_stat(&mut c, "blocked_clients"), 0);
}
