//! `EMQ.CLAIM` / `EMQ.WCLAIM … BLOCK ms`: a worker waits without polling and
//! is woken when a lane of its queue becomes serviceable; waiters are served
//! in the order they began to wait; nothing is lost or left behind.

mod common;

use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::*;

const P: &str = "blk{q}:";

fn blocked_clients(c: &mut redis::Connection) -> i64 {
    info_text(c, "clients", "blocked_clients")
        .unwrap()
        .parse()
        .unwrap()
}

fn emq_blocked(c: &mut redis::Connection) -> i64 {
    info_text(c, "emq", "emq_blocked_clients")
        .unwrap()
        .parse()
        .unwrap()
}

/// Sends `args` on `conn` from a thread; the reply and when it came arrive
/// on the channel.
fn blocked_call(mut conn: redis::Connection, args: &[&str]) -> mpsc::Receiver<(Reply, Instant)> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        let _ = tx.send((cmd(&mut conn, &argv), Instant::now()));
    });
    rx
}

#[test]
fn a_waiting_worker_wakes_on_enqueue() {
    let server = Server::start();
    let mut c = server.conn();
    let rx = blocked_call(server.conn(), &["EMQ.WCLAIM", P, "60000", "BLOCK", "0"]);
    wait_for("the worker waits", || blocked_clients(&mut c) == 1);
    assert_eq!(emq_blocked(&mut c), 1, "INFO emq counts the waiter");
    let enqueued = Instant::now();
    assert_eq!(
        cmd(&mut c, &["EMQ.ENQUEUE", P, "a", "1", "job"]),
        Reply::Ok(Value::Int(1))
    );
    let (reply, at) = rx.recv_timeout(Duration::from_secs(5)).expect("woken");
    let (lane, _, jobs) = reply.claim().expect("served");
    assert_eq!((lane.as_str(), jobs.as_slice()), ("a", &["job".to_string()][..]));
    assert!(
        at - enqueued < Duration::from_millis(500),
        "woken after {:?}",
        at - enqueued
    );
    assert_eq!(blocked_clients(&mut c), 0);
    assert_eq!(emq_blocked(&mut c), 0);
}

#[test]
fn a_wait_times_out_with_a_null_array() {
    let server = Server::start();
    let mut c = server.conn();
    let start = Instant::now();
    let reply = cmd(&mut c, &["EMQ.CLAIM", P, "1000", "block", "200"]);
    let waited = start.elapsed();
    assert_eq!(reply, Reply::Ok(Value::Nil), "BLMOVE's null");
    assert!(
        waited >= Duration::from_millis(180) && waited < Duration::from_secs(3),
        "{waited:?}"
    );
    assert_eq!(emq_blocked(&mut c), 0);
}

#[test]
fn ten_waiters_are_served_in_the_order_they_began_to_wait() {
    let server = Server::start();
    let mut c = server.conn();
    let (tx, rx) = mpsc::channel();
    // Each worker loops: wait, take one job, ACK it, wait again.
    for id in 0..10 {
        let mut w = server.conn();
        let tx = tx.clone();
        thread::spawn(move || loop {
            let reply = cmd(&mut w, &["EMQ.WCLAIM", P, "60000", "BLOCK", "0"]);
            let Some((_, token, jobs)) = reply.claim() else {
                return;
            };
            let mut ack = vec!["EMQ.ACK".to_string(), P.to_string(), token.to_string()];
            ack.extend(jobs.iter().cloned());
            let argv: Vec<&str> = ack.iter().map(String::as_str).collect();
            assert_eq!(cmd(&mut w, &argv), Reply::Ok(Value::Int(jobs.len() as i64)));
            if tx.send((id, jobs)).is_err() {
                return;
            }
        });
        wait_for("the worker queues up", || blocked_clients(&mut c) == id + 1);
    }
    let mut claimed = std::collections::BTreeSet::new();
    for n in 0..100 {
        wait_for("all ten wait", || blocked_clients(&mut c) == 10);
        let job = format!("job{n}");
        assert_eq!(
            cmd(&mut c, &["EMQ.ENQUEUE", P, "lane", &n.to_string(), &job]),
            Reply::Ok(Value::Int(1))
        );
        let (id, jobs) = rx
            .recv_timeout(Duration::from_secs(5))
            .expect("a waiter is served");
        assert_eq!(jobs, std::slice::from_ref(&job), "one job per wake-up");
        assert_eq!(id, n % 10, "job {n} went to waiter {id}: not in waiting order");
        assert!(claimed.insert(job), "claimed twice");
    }
    assert_eq!(claimed.len(), 100);
    assert!(rx.try_recv().is_err(), "no job served twice");
    wait_for("all ten wait again", || blocked_clients(&mut c) == 10);
    assert!(
        snapshot(&mut c, P).is_empty(),
        "every job acked, nothing left: {:?}",
        snapshot(&mut c, P)
    );
    assert_eq!(emq_blocked(&mut c), 10);
}

#[test]
fn no_client_waits_while_a_serviceable_lane_exists() {
    let server = Server::start();
    let mut c = server.conn();
    // A stale head (an empty lane) and a full lane in front of a good one.
    build(
        &mut c,
        P,
        &[
            LaneSpec::new("full", 2).limit(1).active(1),
            LaneSpec::new("good", 1),
        ],
        &["ghost", "full", "good"],
    );
    let start = Instant::now();
    let (lane, _, jobs) = cmd(&mut c, &["EMQ.WCLAIM", P, "1000", "BLOCK", "5000"])
        .claim()
        .expect("served");
    assert!(start.elapsed() < Duration::from_secs(1));
    assert_eq!(
        (lane.as_str(), jobs.as_slice()),
        ("good", &["good1".to_string()][..])
    );
}

#[test]
fn never_blocks_in_multi_or_a_script() {
    let server = Server::start();
    let mut c = server.conn();
    let start = Instant::now();
    let replies: Vec<Value> = redis::pipe()
        .atomic()
        .cmd("EMQ.WCLAIM")
        .arg(P)
        .arg(1000)
        .arg("BLOCK")
        .arg(0)
        .query(&mut c)
        .unwrap();
    assert_eq!(replies, vec![Value::Array(vec![])], "the non-blocking reply");
    let script = cmd(
        &mut c,
        &[
            "EVAL",
            "return redis.call('EMQ.CLAIM', KEYS[1], '1000', 'BLOCK', '0')",
            "1",
            P,
        ],
    );
    assert_eq!(script, Reply::Ok(Value::Array(vec![])));
    assert!(start.elapsed() < Duration::from_secs(2));
    assert_eq!(blocked_clients(&mut c), 0);
}

#[test]
fn a_killed_or_unblocked_waiter_leaves_nothing_behind() {
    let server = Server::start();
    let mut c = server.conn();
    let mut w = server.conn();
    let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut w).unwrap();
    let rx = {
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let r = cmd(&mut w, &["EMQ.WCLAIM", P, "1000", "BLOCK", "0"]);
            let _ = tx.send(r);
        });
        rx
    };
    wait_for("the worker waits", || blocked_clients(&mut c) == 1);
    assert_eq!(
        cmd(&mut c, &["CLIENT", "KILL", "ID", &id.to_string()]),
        Reply::Ok(Value::Int(1))
    );
    let _ = rx.recv_timeout(Duration::from_secs(5));
    wait_for("the kill is seen", || blocked_clients(&mut c) == 0);
    assert_eq!(emq_blocked(&mut c), 0);
    cmd(&mut c, &["EMQ.ENQUEUE", P, "a", "1", "job"]);
    let depth: i64 = redis::cmd("ZCARD")
        .arg(format!("{P}g:a:pending"))
        .query(&mut c)
        .unwrap();
    assert_eq!(depth, 1, "nobody claimed for the dead waiter");

    // CLIENT UNBLOCK ends a wait with the timeout reply.
    let mut w2 = server.conn();
    let id2: i64 = redis::cmd("CLIENT").arg("ID").query(&mut w2).unwrap();
    let rx = blocked_call(w2, &["EMQ.CLAIM", "other{q}:", "1000", "BLOCK", "0"]);
    wait_for("the second worker waits", || blocked_clients(&mut c) == 1);
    assert_eq!(
        cmd(&mut c, &["CLIENT", "UNBLOCK", &id2.to_string()]),
        Reply::Ok(Value::Int(1))
    );
    assert_eq!(
        rx.recv_timeout(Duration::from_secs(5)).unwrap().0,
        Reply::Ok(Value::Nil)
    );
    assert_eq!(emq_blocked(&mut c), 0);
}

#[test]
fn an_ack_that_frees_headroom_wakes_a_waiter() {
    let server = Server::start();
    let mut c = server.conn();
    cmd(&mut c, &["EMQ.ENQUEUE", P, "a", "1", "j1", "2", "j2"]);
    cmd(&mut c, &["EMQ.LIMIT", P, "a", "1"]);
    let (_, token, jobs) = cmd(&mut c, &["EMQ.CLAIM", P, "60000"]).claim().unwrap();
    let rx = blocked_call(server.conn(), &["EMQ.CLAIM", P, "60000", "BLOCK", "0"]);
    wait_for("the worker waits", || blocked_clients(&mut c) == 1);
    assert_eq!(
        cmd(&mut c, &["EMQ.ACK", P, &token.to_string(), &jobs[0]]),
        Reply::Ok(Value::Int(1))
    );
    let (reply, _) = rx.recv_timeout(Duration::from_secs(5)).expect("woken by the ACK");
    assert_eq!(reply.claim().unwrap().2, ["j2"]);
}

#[test]
fn a_served_waiter_replicates_like_any_claim() {
    let primary = Server::start();
    let replica = Server::start_plain(&[]);
    let mut r = replicate_into(&replica, &primary);
    let mut p = primary.conn();
    let rx = blocked_call(primary.conn(), &["EMQ.WCLAIM", P, "60000", "BLOCK", "0"]);
    wait_for("the worker waits", || blocked_clients(&mut p) == 1);
    cmd(&mut p, &["EMQ.ENQUEUE", P, "a", "1", "job"]);
    rx.recv_timeout(Duration::from_secs(5))
        .unwrap()
        .0
        .claim()
        .expect("served");
    in_sync(&mut p, &mut r);
    assert_eq!(digest(&mut p), digest(&mut r));
    let leases: i64 = redis::cmd("ZCARD")
        .arg(format!("{P}leases"))
        .query(&mut r)
        .unwrap();
    assert_eq!(leases, 1, "the replica has the lease");
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
        (&["EMQ.CLAIM", P, "1000", "WAIT", "5"], "ERR syntax error"),
        (
            &["EMQ.CLAIM", P, "1000", "BLOCK"],
            "ERR wrong number of arguments for 'emq.claim' command",
        ),
    ] {
        assert_eq!(cmd(&mut c, args).err(), Some(expect), "{args:?}");
    }
}

#[test]
fn the_example_worker_drains_a_queue() {
    // Built by `cargo test` beside this test binary: target/<profile>/examples/worker.
    let exe = std::env::current_exe().unwrap();
    let worker = exe
        .parent()
        .and_then(|deps| deps.parent())
        .unwrap()
        .join("examples")
        .join("worker");
    assert!(worker.is_file(), "{} is missing", worker.display());
    let server = Server::start();
    let mut c = server.conn();
    let url = format!("redis://127.0.0.1:{}/", server.port);
    let child = std::process::Command::new(&worker)
        .args([url.as_str(), P, "3"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for("the worker waits", || blocked_clients(&mut c) == 1);
    cmd(
        &mut c,
        &["EMQ.ENQUEUE", P, "acme", "1", "job-1", "2", "job-2", "3", "job-3"],
    );
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let printed = String::from_utf8_lossy(&out.stdout);
    for job in ["job-1", "job-2", "job-3"] {
        assert!(printed.contains(&format!("lane acme job {job}")), "{printed}");
    }
    assert!(
        snapshot(&mut c, P).is_empty(),
        "all acked: {:?}",
        snapshot(&mut c, P)
    );
}

#[test]
fn unserviceable_head_lanes_leave_the_ring_before_the_serving_one() {
    let server = Server::start();
    let mut c = server.conn();
    enqueue_two(&mut c, P, &["a", "b", "c"]);
    // a and b can no longer be served (their jobs went behind the module's back).
    for lane in ["a", "b"] {
        let _: () = redis::cmd("DEL")
            .arg(format!("{P}g:{lane}:pending"))
            .query(&mut c)
            .unwrap();
    }
    let (lane, _, jobs) = cmd(&mut c, &["EMQ.WCLAIM", P, "60000", "BLOCK", "100"])
        .claim()
        .expect("served at once");
    assert_eq!((lane.as_str(), jobs), ("c", vec!["c1".to_string()]));
    assert_eq!(ring(&mut c, P), ["c"], "a and b left the ring");
}

/// A BLOCK claim that can serve nothing writes nothing (a wake-up that
/// writes and keeps waiting aborts Redis 7.0): lane a heads the ring and
/// cannot be served (its jobs went behind the module's back), lane b after
/// it is damaged (skipped), in one of two ways. The claim waits, times out,
/// and the keyspace is as it was; a non-blocking claim then drops a.
#[test]
fn a_blocking_claim_that_can_serve_nothing_writes_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    let corrupt_weight = |c: &mut redis::Connection, p: &str| {
        let _: () = redis::cmd("HSET")
            .arg(format!("{p}gweight"))
            .arg("b")
            .arg("many")
            .query(c)
            .unwrap();
    };
    let wrong_type = |c: &mut redis::Connection, p: &str| {
        let _: () = redis::cmd("DEL").arg(format!("{p}g:b:pending")).query(c).unwrap();
        let _: () = redis::cmd("SET")
            .arg(format!("{p}g:b:pending"))
            .arg("x")
            .query(c)
            .unwrap();
    };
    type Corrupt<'a> = &'a dyn Fn(&mut redis::Connection, &str);
    let cases: [(&str, &str, Corrupt); 3] = [
        ("e1{q}:", "EMQ.WCLAIM", &corrupt_weight),
        ("e2{q}:", "EMQ.WCLAIM", &wrong_type),
        ("e3{q}:", "EMQ.CLAIM", &wrong_type),
    ];
    for (p, verb, corrupt) in cases {
        for lane in ["a", "b"] {
            cmd(&mut c, &["EMQ.ENQUEUE", p, lane, "1", &format!("{lane}1")]);
        }
        let _: () = redis::cmd("DEL")
            .arg(format!("{p}g:a:pending"))
            .query(&mut c)
            .unwrap();
        corrupt(&mut c, p);
        let before = digest(&mut c);
        let reply = cmd(&mut c, &[verb, p, "60000", "BLOCK", "100"]);
        assert_eq!(reply, Reply::Ok(Value::Nil), "{verb}: timed out");
        assert_eq!(digest(&mut c), before, "{verb}: nothing changed");
        assert_eq!(ring(&mut c, p), ["a", "b"]);
        let reply = cmd(&mut c, &[verb, p, "60000"]);
        assert_eq!(reply.claim(), None, "{verb}: a is dropped, nothing served");
        assert_eq!(ring(&mut c, p), ["b"]);
    }
}

/// A lane in the ring that a claim skips (its own numbers are damaged) and
/// an operator then mends — with EMQ.WEIGHT, EMQ.LIMIT or EMQ.REPAIR — wakes
/// the claims waiting on the queue: no ring join happens, and none may be
/// needed for a waiter to see it.
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
        cmd(&mut c, &["EMQ.ENQUEUE", &p, "D", "1", "d1"]);
        hset(&mut c, &format!("{p}{hash}"), "D", bad);
        let waiter = server.call_in_thread(&["EMQ.WCLAIM", &p, "60000", "BLOCK", "5000"]);
        wait_for("the waiter", || {
            info_text(&mut c, "emq", "emq_blocked_clients").as_deref() == Some("1")
        });
        let mut args = vec![*mend, p.as_str(), "D"];
        args.extend(rest.iter());
        assert!(cmd(&mut c, &args).err().is_none(), "{mend}");
        let started = std::time::Instant::now();
        let (lane, _, jobs) = waiter
            .join()
            .unwrap()
            .claim()
            .unwrap_or_else(|| panic!("{mend} woke the waiter"));
        assert_eq!((lane.as_str(), jobs), ("D", vec!["d1".to_string()]), "{mend}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(3),
            "{mend}: woken, not timed out"
        );
    }
}
