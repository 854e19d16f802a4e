//! The timer of waiting clients: while a client waits on a queue, its
//! expired leases are returned at their deadline (counting stalls) and its
//! scheduled jobs promoted at their due time, on the primary only — so a
//! queue whose workers block needs no reaper, no stalled checker and no
//! promote loop.

mod support;

use std::thread;
use std::time::{Duration, Instant};

use support::fixtures::{fill, now_ms, row, served, zscore};
use support::replication::{digest, in_sync, replicate_into};
use support::server::slow;
use support::{emq_stat, wait_for, Server, Value};

const P: &str = "tm{q}:";

#[test]
fn a_killed_workers_job_reaches_a_waiting_worker_at_its_deadline() {
    let server = Server::start_with(&["--emq.reap-on-claim", "0"]);
    let mut c = server.conn();
    fill(&mut c, P, "a", 1);
    // The worker that takes it dies: nobody completes it.
    let deadline = served(&c.ok(&["EMQ.CLAIM", P, "300"]))[0].clone();
    let lease_end = zscore(&mut c, &format!("{P}active"), &deadline.0).unwrap();
    let waiter = server.call_in_thread(&["EMQ.CLAIM", P, "60000", "BLOCK", "5000"]);
    let jobs = served(&waiter.join().unwrap().unwrap());
    assert_eq!(
        (jobs[0].0.as_str(), jobs[0].2),
        ("JOB-a-00001", 2),
        "leased again, attempts 2"
    );
    let late = now_ms(&mut c) - lease_end;
    assert!(
        (0..2_000).contains(&late),
        "returned {late} ms after the deadline"
    );
    assert_eq!(
        row(&mut c, P, "JOB-a-00001", "stalled").as_deref(),
        Some("1"),
        "the stall counted"
    );
    assert_eq!(emq_stat(&mut c, "jobs_reaped_by_timer"), 1);
}

#[test]
fn a_retried_job_reaches_a_waiting_worker_at_its_due_time() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "a", 1);
    let j = served(&c.ok(&["EMQ.CLAIM", P, "60000"]))[0].clone();
    let waiter = server.call_in_thread(&["EMQ.CLAIM", P, "60000", "BLOCK", "5000"]);
    wait_for("the waiter", || emq_stat(&mut c, "blocked_clients") == 1);
    let asked = Instant::now();
    assert_eq!(
        c.ok(&["EMQ.RETRY", P, &j.0, "1", "300", "5", "try again"]).text(),
        "scheduled"
    );
    let jobs = served(&waiter.join().unwrap().unwrap());
    let after = asked.elapsed();
    assert_eq!(jobs[0].0, j.0);
    assert!(
        after >= Duration::from_millis(250) && after < Duration::from_secs(3),
        "{after:?}"
    );
    assert_eq!(emq_stat(&mut c, "jobs_promoted_by_timer"), 1);
}

#[test]
fn a_poison_job_dies_at_the_threshold_with_nobody_calling_reap() {
    let server = Server::start_with(&["--emq.reap-on-claim", "0"]);
    let mut c = server.conn();
    c.ok(&["EMQ.POLICY", P, "max-stalled", "3"]);
    fill(&mut c, P, "a", 1);
    // Every worker that takes it crashes; the next one waits for it.
    let mut leases = 0;
    loop {
        let got = c.ok(&["EMQ.CLAIM", P, "50", "BLOCK", "1500"]);
        if got == Value::Nil {
            break;
        }
        leases += 1;
        assert!(leases <= 3, "leased past its threshold");
    }
    assert_eq!(leases, 3, "leased exactly max-stalled times");
    assert_eq!(row(&mut c, P, "JOB-a-00001", "state").as_deref(), Some("dead"));
    assert_eq!(
        row(&mut c, P, "JOB-a-00001", "last_error").as_deref(),
        Some("stalled")
    );
}

#[test]
fn a_replica_never_runs_the_timer() {
    let primary = Server::start();
    let replica = Server::start_with(&["--replica-read-only", "no"]);
    let mut r = replicate_into(&replica, &primary);
    let mut c = primary.conn();
    fill(&mut c, P, "a", 1);
    c.ok(&["EMQ.CLAIM", P, "200"]);
    in_sync(&mut c, &mut r);
    // Long enough, times EMQ_SLOW, for the poll below to see the waiter
    // still blocked on a server under valgrind; well past the 200 ms lease.
    let block = (600 * slow()).to_string();
    let waiter = replica.call_in_thread(&["EMQ.CLAIM", P, "1000", "BLOCK", &block]);
    wait_for("the replica's waiter", || {
        emq_stat(&mut r, "blocked_clients") == 1
    });
    assert_eq!(
        emq_stat(&mut r, "timers"),
        1,
        "set for the lease, on the replica too"
    );
    assert_eq!(
        waiter.join().unwrap(),
        Ok(Value::Nil),
        "nothing returned on the replica"
    );
    assert_eq!(emq_stat(&mut r, "jobs_reaped_by_timer"), 0);
    assert!(
        zscore(&mut r, &format!("{P}active"), "JOB-a-00001").is_some(),
        "its primary decides"
    );
    assert_eq!(c.int(&["EMQ.REAP", P]), 1);
    in_sync(&mut c, &mut r);
    assert_eq!(digest(&mut c), digest(&mut r));
}

#[test]
fn a_promoted_replica_returns_leases_for_its_waiters() {
    let primary = Server::start();
    let replica = Server::start();
    let mut r = replicate_into(&replica, &primary);
    let mut c = primary.conn();
    fill(&mut c, P, "a", 1);
    c.ok(&["EMQ.CLAIM", P, "800"]);
    let old = zscore(&mut c, &format!("{P}active"), "JOB-a-00001").unwrap();
    in_sync(&mut c, &mut r);
    drop(c);
    drop(primary);
    r.ok(&["REPLICAOF", "NO", "ONE"]);
    let jobs = served(&r.ok(&["EMQ.CLAIM", P, "60000", "BLOCK", "5000"]));
    assert_eq!(
        jobs[0].0, "JOB-a-00001",
        "the new primary returned the lease to its waiter"
    );
    let new = zscore(&mut r, &format!("{P}active"), "JOB-a-00001").unwrap();
    assert!(
        (0..1_500).contains(&(new - 60_000 - old)),
        "returned at the old deadline"
    );
}

#[test]
fn no_timer_outlives_its_waiters() {
    let server = Server::start_with(&["--enable-module-command", "local"]);
    let mut c = server.conn();
    fill(&mut c, P, "a", 1);
    c.ok(&["EMQ.CLAIM", P, "60000"]);
    assert_eq!(emq_stat(&mut c, "timers"), 0, "nobody waits");
    assert_eq!(c.cmd(&["EMQ.CLAIM", P, "1000", "BLOCK", "100"]), Ok(Value::Nil));
    assert_eq!(
        emq_stat(&mut c, "timers"),
        0,
        "the waiter timed out, its timer stopped"
    );
    let mut w = server.conn();
    let id = w.int(&["CLIENT", "ID"]);
    let t = thread::spawn(move || w.cmd(&["EMQ.CLAIM", P, "1000", "BLOCK", "0"]));
    wait_for("the waiter", || emq_stat(&mut c, "timers") == 1);
    c.int(&["CLIENT", "KILL", "ID", &id.to_string()]);
    let _ = t.join();
    wait_for("the kill is seen", || emq_stat(&mut c, "blocked_clients") == 0);
    assert_eq!(emq_stat(&mut c, "timers"), 0);
    c.ok(&["MODULE", "UNLOAD", "emq"]);
}

#[test]
fn the_timer_writes_nothing_while_writes_are_paused() {
    let mut primary = Server::start_with(&["--appendonly", "yes"]);
    let replica = Server::start_plain(&[]);
    let mut r = replicate_into(&replica, &primary);
    let mut c = primary.conn();
    fill(&mut c, P, "a", 1);
    c.ok(&["EMQ.CLAIM", P, "300"]);
    let waiter = primary.call_in_thread(&["EMQ.CLAIM", P, "60000", "BLOCK", "10000"]);
    wait_for("the waiter", || emq_stat(&mut c, "blocked_clients") == 1);
    c.ok(&["CLIENT", "PAUSE", "1500", "WRITE"]);
    let before = digest(&mut c);
    thread::sleep(Duration::from_millis(900)); // the lease ran out meanwhile
    assert!(primary.alive(), "the server survived the pause");
    assert_eq!(digest(&mut c), before, "nothing written during the pause");
    let jobs = served(&waiter.join().unwrap().unwrap());
    assert_eq!(jobs[0].0, "JOB-a-00001", "served once writes resumed");
    in_sync(&mut c, &mut r);
    assert_eq!(digest(&mut c), digest(&mut r));
}

#[test]
fn the_timer_works_in_the_waiters_database() {
    let server = Server::start_with(&["--emq.reap-on-claim", "0"]);
    let mut c = server.conn();
    c.ok(&["SELECT", "3"]);
    fill(&mut c, P, "a", 1);
    c.ok(&["EMQ.CLAIM", P, "200"]);
    let jobs = served(&c.ok(&["EMQ.CLAIM", P, "60000", "BLOCK", "5000"]));
    assert_eq!(jobs[0].0, "JOB-a-00001");
    c.ok(&["SELECT", "0"]);
    assert_eq!(c.int(&["DBSIZE"]), 0, "nothing written in database 0");
}

#[test]
fn returns_and_promotions_of_the_timer_reach_a_replica_and_the_aof() {
    support::replication::replicated_and_persisted(&["--emq.reap-on-claim", "0"], false, |server, c| {
        fill(c, P, "a", 3);
        c.ok(&["EMQ.WEIGHT", P, "a", "2"]);
        let jobs = served(&c.ok(&["EMQ.WCLAIM", P, "200"]));
        c.ok(&["EMQ.RETRY", P, &jobs[1].0, "1", "250", "5", "e"]);
        let w = server.call_in_thread(&["EMQ.BCLAIM", P, "60000", "BLOCK", "5000"]);
        let got = served(&w.join().unwrap().unwrap());
        assert!(!got.is_empty());
        thread::sleep(Duration::from_millis(400));
        let w = server.call_in_thread(&["EMQ.BCLAIM", P, "60000", "BLOCK", "3000"]);
        let _ = w.join();
        assert!(emq_stat(c, "jobs_reaped_by_timer") + emq_stat(c, "jobs_promoted_by_timer") >= 1);
    });
}

/// A due time an EchoMQ script wrote (its `@retry`, which cannot set the
/// timer) while a worker waits: the timer, which looks at
/// least once a second while clients wait, promotes the job to the worker.
#[test]
fn a_due_time_a_script_wrote_reaches_a_waiting_worker() {
    let server = Server::start();
    let mut c = server.conn();
    let twins = support::twins::Twins::load(&mut c);
    fill(&mut c, P, "a", 1);
    c.ok(&["EMQ.CLAIM", P, "100000"]);
    let waiter = server.call_in_thread(&["EMQ.CLAIM", P, "100000", "BLOCK", "4000"]);
    wait_for("the waiter", || emq_stat(&mut c, "blocked_clients") == 1);
    let args: [&[u8]; 6] = [P.as_bytes(), b"JOB-a-00001", b"1", b"300", b"5", b"e"];
    twins.like_native(&mut c, "retry", &args).unwrap();
    let started = Instant::now();
    let jobs = served(&waiter.join().unwrap().unwrap());
    assert_eq!(jobs[0].0, "JOB-a-00001", "promoted and served");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "within the timer's look"
    );
}
