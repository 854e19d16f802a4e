//! EchoMQ's flat (lane-less) queue as commands (SPEC section 9): claims that
//! wait on `P pending` and are served, in the order the workers began to
//! wait, by whatever adds there (EMQ.QENQUEUE, EchoMQ's own `@enqueue`, a
//! promotion, an expired lease's return); a paused queue; the heads a claim
//! will not lease (docs/damage.md, "The flat queue"); MEXTEND's named
//! difference.

mod support;

use std::thread::JoinHandle;

use support::twins::source;
use support::{emq_stat, wait_for, Reply, Server, Value};

const P: &str = "f{q}:";

fn waiter(s: &Server, args: &[&str]) -> JoinHandle<Reply> {
    let mut full = vec![args[0], P];
    full.extend_from_slice(&args[1..]);
    s.call_in_thread(&full)
}

/// The ids of a QCLAIM reply (`[id, payload, attempts]`) or QBCLAIM's.
fn ids(v: &Value) -> Vec<String> {
    match v.items().first() {
        Some(Value::Array(_)) => v.items().iter().map(|j| j.items()[0].text()).collect(),
        Some(id) => vec![id.text()],
        None => vec![],
    }
}

#[test]
fn waiting_flat_claims_are_served_in_turn_by_whatever_adds_a_job() {
    let s = Server::start();
    let mut c = s.conn();
    let mut waiters = Vec::new();
    for i in 0..3 {
        waiters.push(waiter(&s, &["EMQ.QCLAIM", "60000", "BLOCK", "0"]));
        wait_for("the waiter", || emq_stat(&mut c, "blocked_clients") == i + 1);
    }
    // 1. A native enqueue.
    c.ok(&["EMQ.QENQUEUE", P, "JOB-1", "one"]);
    // 2. EchoMQ's own @enqueue, as its host calls it (no wake of its own:
    //    the job it adds is enough).
    let sha = c.ok(&["SCRIPT", "LOAD", &source("enqueue")]).text();
    let row = format!("{P}job:JOB-2");
    c.ok(&["EVALSHA", &sha, "2", &row, &format!("{P}pending"), "JOB-2", "two"]);
    // 3. A job scheduled 100 ms out, promoted by the timer.
    c.ok(&["EMQ.QSCHEDULE", P, "JOB-3", "three", "IN", "100"]);
    let got: Vec<Vec<String>> = waiters
        .into_iter()
        .map(|w| ids(&w.join().unwrap().unwrap()))
        .collect();
    assert_eq!(got, [["JOB-1"], ["JOB-2"], ["JOB-3"]]);
    // 4. A lease that runs out, returned by the timer to a waiter.
    c.ok(&["EMQ.QENQUEUE", P, "JOB-4", "four"]);
    assert_eq!(ids(&c.ok(&["EMQ.QCLAIM", P, "150"])), ["JOB-4"]);
    let w = waiter(&s, &["EMQ.QCLAIM", "60000", "BLOCK", "0"]);
    let last = w.join().unwrap().unwrap();
    assert_eq!(ids(&last), ["JOB-4"]);
    assert_eq!(last.items()[2], Value::Int(2), "its second lease");
    assert!(emq_stat(&mut c, "jobs_reaped_by_timer") >= 1);
    assert!(emq_stat(&mut c, "jobs_promoted_by_timer") >= 1);
}

#[test]
fn a_batch_claim_waits_and_takes_what_came() {
    let s = Server::start();
    let mut c = s.conn();
    let w = waiter(&s, &["EMQ.QBCLAIM", "60000", "32", "BLOCK", "5000"]);
    wait_for("the waiter", || emq_stat(&mut c, "blocked_clients") == 1);
    c.ok(&["EMQ.QENQUEUE", P, "JOB-1", "a", "JOB-2", "b", "JOB-3", "c"]);
    let got = w.join().unwrap().unwrap();
    assert_eq!(ids(&got), ["JOB-1", "JOB-2", "JOB-3"]);
    assert_eq!(c.int(&["ZCARD", &format!("{P}active")]), 3);
    // On timeout a null array, as BLMOVE gives.
    let w = waiter(&s, &["EMQ.QBCLAIM", "60000", "32", "BLOCK", "50"]);
    assert_eq!(w.join().unwrap(), Ok(Value::Nil));
}

#[test]
fn a_paused_queue_serves_no_flat_claim_until_resumed() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["EMQ.QENQUEUE", P, "JOB-1", "one"]);
    c.ok(&["EMQ.QPAUSE", P]);
    assert_eq!(c.ok(&["EMQ.QCLAIM", P, "60000"]), Value::Array(vec![]));
    let w = waiter(&s, &["EMQ.QCLAIM", "60000", "BLOCK", "5000"]);
    wait_for("the waiter", || emq_stat(&mut c, "blocked_clients") == 1);
    c.ok(&["EMQ.QRESUME", P]);
    assert_eq!(ids(&w.join().unwrap().unwrap()), ["JOB-1"]);
}

#[test]
fn a_flat_claim_leases_only_heads_whose_rows_wait_there() {
    let s = Server::start();
    let mut c = s.conn();
    let pending = format!("{P}pending");
    // A head with no row, a lane's job (as EchoMQ's @reprocess leaves one),
    // a row whose attempts are no number, then a sound one.
    c.ok(&["ZADD", &pending, "0", "JOB-0gone"]);
    c.ok(&[
        "HSET",
        &format!("{P}job:JOB-1lane"),
        "state",
        "pending",
        "attempts",
        "1",
        "group",
        "a",
    ]);
    c.ok(&["ZADD", &pending, "0", "JOB-1lane"]);
    c.ok(&[
        "HSET",
        &format!("{P}job:JOB-2bad"),
        "state",
        "pending",
        "attempts",
        "x",
    ]);
    c.ok(&["ZADD", &pending, "0", "JOB-2bad"]);
    c.ok(&["EMQ.QENQUEUE", P, "JOB-3", "three"]);
    let got = c.ok(&["EMQ.QCLAIM", P, "60000"]);
    assert_eq!(ids(&got), ["JOB-3"]);
    // The head with no row is dropped, the lane's job goes to its lane (rung
    // with a wake), the damaged row waits unleased.
    let left: Vec<String> = c.ok(&["ZRANGE", &pending, "0", "-1"]).texts();
    assert_eq!(left, ["JOB-2bad"]);
    assert_eq!(
        c.ok(&["ZRANGE", &format!("{P}g:a:pending"), "0", "-1"]).texts(),
        ["JOB-1lane"]
    );
    assert_eq!(c.ok(&["LRANGE", &format!("{P}ring"), "0", "-1"]).texts(), ["a"]);
    assert_eq!(
        c.int(&["EXISTS", &format!("{P}job:JOB-0gone")]),
        0,
        "no ghost row"
    );
    assert_eq!(emq_stat(&mut c, "strays"), 2);
    assert_eq!(c.ok(&["EMQ.QCLAIM", P, "60000"]), Value::Array(vec![]));
}

#[test]
fn mextend_extends_leased_jobs_only() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["EMQ.QENQUEUE", P, "JOB-1", "a", "JOB-2", "b", "JOB-3", "c"]);
    c.ok(&["EMQ.QCLAIM", P, "1000"]);
    let active = format!("{P}active");
    let before: i64 = c.ok(&["ZSCORE", &active, "JOB-1"]).text().parse().unwrap();
    // JOB-2 holds token 0 but waits: the script would lease it too.
    let failed = c.ok(&[
        "EMQ.MEXTEND",
        P,
        "60000",
        "JOB-1",
        "1",
        "JOB-2",
        "0",
        "JOB-9",
        "1",
        "JOB-1",
        "7",
    ]);
    assert_eq!(failed.texts(), ["JOB-2", "JOB-9", "JOB-1"]);
    let after: i64 = c.ok(&["ZSCORE", &active, "JOB-1"]).text().parse().unwrap();
    assert!(after >= before + 59_000, "{before} → {after}");
    assert_eq!(c.int(&["ZCARD", &active]), 1, "JOB-2 not leased");
    let e = c.cmd(&["EMQ.MEXTEND", P, "60000"]).unwrap_err();
    assert!(e.contains("wrong number of arguments"), "{e}");
    let e = c.cmd(&["EMQ.MEXTEND", P, "60000", "JOB-1"]).unwrap_err();
    assert!(e.contains("wrong number of arguments"), "{e}");
}

#[test]
fn a_waiter_woken_by_a_head_it_cannot_lease_waits_on_and_writes_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    let w = waiter(&s, &["EMQ.QCLAIM", "60000", "BLOCK", "5000"]);
    wait_for("the waiter", || emq_stat(&mut c, "blocked_clients") == 1);
    let digest = |c: &mut support::Conn| c.ok(&["DEBUG", "DIGEST"]).text();
    c.ok(&["ZADD", &format!("{P}pending"), "0", "JOB-0gone"]);
    let before = digest(&mut c);
    std::thread::sleep(std::time::Duration::from_millis(50));
    assert_eq!(emq_stat(&mut c, "blocked_clients"), 1, "still waiting");
    assert_eq!(digest(&mut c), before, "the wake-up wrote nothing");
    c.ok(&["EMQ.QENQUEUE", P, "JOB-1", "one"]);
    assert_eq!(ids(&w.join().unwrap().unwrap()), ["JOB-1"]);
    // The claim that leased dropped the head it could not.
    assert_eq!(c.int(&["ZCARD", &format!("{P}pending")]), 0);
}

#[test]
fn a_flat_lease_made_while_clients_wait_is_returned_at_its_end() {
    let s = Server::start();
    let mut c = s.conn();
    let w = waiter(&s, &["EMQ.QCLAIM", "60000", "BLOCK", "10000"]);
    wait_for("the waiter", || emq_stat(&mut c, "blocked_clients") == 1);
    // Enqueued and leased for 300 ms at once (the waiter cannot take it).
    let started = std::time::Instant::now();
    let r = c
        .pipeline(&[
            vec![b"MULTI".to_vec()],
            [b"EMQ.QENQUEUE".as_slice(), P.as_bytes(), b"JOB-1", b"one"]
                .map(<[u8]>::to_vec)
                .to_vec(),
            [b"EMQ.QCLAIM".as_slice(), P.as_bytes(), b"300"]
                .map(<[u8]>::to_vec)
                .to_vec(),
            vec![b"EXEC".to_vec()],
        ])
        .unwrap();
    assert!(r[3].is_ok(), "{r:?}");
    let got = w.join().unwrap().unwrap();
    assert_eq!(ids(&got), ["JOB-1"]);
    assert_eq!(got.items()[2], Value::Int(2));
    // At its deadline, not at the timer's once-a-second look.
    let took = started.elapsed();
    assert!(
        took < std::time::Duration::from_millis(900) * support::server::slow(),
        "returned after {took:?}"
    );
}
