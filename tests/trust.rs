//! What must never happen to a queue a team relies on — the server aborting,
//! a waiter lost, a key touched that the caller may not touch — under what
//! servers do to waiting clients: write pauses, FAILOVER, FLUSHALL, SWAPDB,
//! CLIENT UNBLOCK, MODULE UNLOAD; with the AOF on and a replica attached.

mod support;

use std::thread;
use std::time::Duration;

use support::fixtures::{fill, ring, served};
use support::replication::{digest, in_sync, replicate_into};
use support::server::built;
use support::{emq_stat, wait_for, Conn, Reply, Server, Value};

const P: &str = "t{q}:";

/// Starts `EMQ.WCLAIM P 30000 BLOCK ms` on its own connection and waits
/// until the server counts it as waiting.
fn waiter(server: &Server, ms: &str) -> thread::JoinHandle<Reply> {
    let handle = server.call_in_thread(&["EMQ.WCLAIM", P, "30000", "BLOCK", ms]);
    let mut c = server.conn();
    wait_for("the claim to wait", || emq_stat(&mut c, "blocked_clients") == 1);
    handle
}

/// A primary with the AOF on and a replica without the module.
fn pair() -> (Server, Server, Conn, Conn) {
    let primary = Server::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let replica = Server::start_plain(&[]);
    let r = replicate_into(&replica, &primary);
    let c = primary.conn();
    (primary, replica, c, r)
}

#[test]
fn a_lane_rung_under_a_waiting_claim_never_aborts_the_server() {
    let (mut primary, _replica, mut c, mut r) = pair();
    let waiting = waiter(&primary, "3000");
    c.ok(&["RPUSH", &format!("{P}ring"), "ghost"]);
    thread::sleep(Duration::from_millis(50));
    assert!(primary.alive(), "the server lives");
    assert_eq!(
        emq_stat(&mut c, "blocked_clients"),
        1,
        "still waiting, nothing served"
    );
    assert_eq!(ring(&mut c, P), ["ghost"], "the wake-up wrote nothing");
    fill(&mut c, P, "A", 1);
    assert_eq!(served(&waiting.join().unwrap().unwrap())[0].3, "A");
    assert!(ring(&mut c, P).is_empty(), "ghost dropped on the way");
    in_sync(&mut c, &mut r);
    assert_eq!(digest(&mut c), digest(&mut r), "the replica follows");
}

#[test]
fn flushall_and_swapdb_under_a_waiter_lose_it_nothing_and_abort_nothing() {
    let (mut primary, _replica, mut c, mut r) = pair();
    let waiting = waiter(&primary, "5000");
    c.ok(&["FLUSHALL"]);
    thread::sleep(Duration::from_millis(50));
    assert_eq!(
        emq_stat(&mut c, "blocked_clients"),
        1,
        "FLUSHALL leaves the waiter waiting"
    );
    // A queue with work appears in database 1, then becomes database 0.
    c.ok(&["SELECT", "1"]);
    fill(&mut c, P, "A", 1);
    c.ok(&["SELECT", "0"]);
    c.ok(&["SWAPDB", "0", "1"]);
    let got = waiting.join().unwrap().unwrap();
    assert_eq!(
        served(&got)[0].0,
        "JOB-A-00001",
        "served from the database it waits in"
    );
    assert!(primary.alive());
    in_sync(&mut c, &mut r);
    assert_eq!(digest(&mut c), digest(&mut r));
}

#[test]
fn unblock_and_unload_while_a_client_waits() {
    let server = Server::start_with(&["--enable-module-command", "local"]);
    let mut c = server.conn();
    let mut w = server.conn();
    let id = w.int(&["CLIENT", "ID"]);
    let t = thread::spawn(move || w.cmd(&["EMQ.CLAIM", P, "1000", "BLOCK", "0"]));
    wait_for("the waiter", || emq_stat(&mut c, "blocked_clients") == 1);
    let unload = c.cmd(&["MODULE", "UNLOAD", "emq"]);
    assert!(
        unload.is_err(),
        "a module with a waiting client stays loaded: {unload:?}"
    );
    c.int(&["CLIENT", "UNBLOCK", &id.to_string()]);
    assert_eq!(t.join().unwrap(), Ok(Value::Nil), "UNBLOCK: the timeout reply");
    wait_for("the waiter gone", || emq_stat(&mut c, "blocked_clients") == 0);
    c.ok(&["MODULE", "UNLOAD", "emq"]);
    c.ok(&[
        "MODULE",
        "LOAD",
        &support::server::module_path().display().to_string(),
    ]);
    fill(&mut c, P, "A", 1);
    assert_eq!(
        served(&c.ok(&["EMQ.CLAIM", P, "1000"])).len(),
        1,
        "loaded again, serving"
    );
}

#[test]
fn a_write_pause_and_a_failover_with_a_client_waiting() {
    let (mut primary, replica, mut c, mut r) = pair();
    fill(&mut c, P, "A", 1);
    c.ok(&["EMQ.CLAIM", P, "60000"]);
    let waiting = waiter(&primary, "3000");
    c.ok(&["CLIENT", "PAUSE", "300", "WRITE"]);
    fill(&mut c, P, "B", 1); // held until the pause ends
    let got = waiting.join().unwrap().unwrap();
    assert_eq!(served(&got)[0].3, "B", "served once the pause ended");
    in_sync(&mut c, &mut r);
    // FAILOVER: the replica takes over while a client waits on the primary.
    let waiting = waiter(&primary, "3000");
    c.ok(&["FAILOVER", "TO", "127.0.0.1", &replica.port.to_string()]);
    wait_for("the roles swap", || {
        support::info_field(&mut r, "replication", "role").as_deref() == Some("master")
    });
    let reply = waiting.join().unwrap();
    assert!(primary.alive(), "the old primary lives ({reply:?})");
    assert!(
        !matches!(reply, Ok(Value::Array(ref a)) if !a.is_empty()),
        "nothing served by a replica: {reply:?}"
    );
    wait_for("the old primary follows", || {
        support::info_field(&mut c, "replication", "master_link_status").as_deref() == Some("up")
    });
    wait_for("the same keyspace", || digest(&mut c) == digest(&mut r));
}

#[test]
fn a_caller_that_cannot_block_is_not_blocked_and_one_that_can_is_served() {
    let caller = built("libcaller.so");
    let mut server = Server::start_with(&["--loadmodule", caller.to_str().unwrap()]);
    let mut c = server.conn();
    let r = c.cmd(&["CALLER.CALL", "-", "EMQ.CLAIM", P, "1000", "BLOCK", "0"]);
    assert_eq!(
        r,
        Ok(Value::Array(vec![])),
        "no blocking without K: the non-blocking reply"
    );
    // With K the call gets a promise (the test module lets go of it); the
    // waiting claim is served when a lane joins.
    let r = c.cmd(&["CALLER.CALL", "KE", "EMQ.CLAIM", P, "60000", "BLOCK", "0"]);
    if r.as_ref().err().is_some_and(|e| e.contains("RM_Call failed")) {
        // Redis 7.0 has no blocking module calls: refused, the server lives.
        assert!(server.alive());
        return;
    }
    assert_eq!(r, Ok(Value::Simple("PROMISE".into())));
    assert_eq!(emq_stat(&mut c, "blocked_clients"), 1);
    fill(&mut c, P, "A", 1);
    wait_for("the waiter served", || emq_stat(&mut c, "blocked_clients") == 0);
    assert_eq!(
        support::fixtures::row(&mut c, P, "JOB-A-00001", "state").as_deref(),
        Some("active")
    );
    assert!(server.alive());
}

#[test]
fn key_permissions_cover_every_key_a_call_touches() {
    let caller = built("libcaller.so");
    let server = Server::start_with(&["--loadmodule", caller.to_str().unwrap()]);
    let mut admin = server.conn();
    let user = |name: &str, patterns: &[&str]| {
        let mut args = vec!["ACL", "SETUSER", name, "on", "nopass", "+@all", "resetkeys"];
        args.extend_from_slice(patterns);
        server.conn().ok(&args);
        let mut c = server.conn();
        c.ok(&["AUTH", name, "x"]);
        c
    };
    let before = digest(&mut admin);
    let mut narrow = user("narrow", &["~q"]);
    let refused = [
        narrow.cmd(&["EMQ.ENQUEUE", "q", "A", "JOB1", "x"]),
        narrow.cmd(&[
            "EVAL",
            "return redis.call('EMQ.ENQUEUE', KEYS[1], 'A', 'JOB1', 'x')",
            "1",
            "q",
        ]),
        narrow.cmd(&["CALLER.CALL", "CE", "EMQ.ENQUEUE", "q", "A", "JOB1", "x"]),
        narrow.cmd(&["EMQ.WCLAIM", "q", "1000"]),
    ];
    for r in &refused {
        assert!(r.as_ref().err().is_some_and(|e| e.contains("NOPERM")), "{r:?}");
    }
    assert_eq!(digest(&mut admin), before, "nothing written");
    let log = admin.ok(&["ACL", "LOG"]);
    let objects: Vec<String> = log
        .items()
        .iter()
        .filter_map(|e| e.field("object").map(Value::text))
        .collect();
    assert!(
        objects.iter().any(|o| o == "qring" || o == "qmeta"),
        "the denials are in ACL LOG: {objects:?}"
    );
    let mut wide = user("wide", &["~q*"]);
    assert_eq!(wide.int(&["EMQ.ENQUEUE", "q", "A", "JOB1", "x"]), 1);
    let exact_keys = [
        "~q",
        "~qring",
        "~qwake",
        "~qg:A:pending",
        "~qgactive",
        "~qglimit",
        "~qpaused",
        "~qgnext",
        "~qjob:JOB2",
    ];
    let mut exact = user("exact", &exact_keys);
    assert_eq!(
        exact.int(&["EMQ.ENQUEUE", "q", "A", "JOB2", "y"]),
        1,
        "exactly the keys it needs"
    );
    let other_lane = exact.cmd(&["EMQ.ENQUEUE", "q", "B", "JOB2", "y"]);
    assert!(other_lane.err().is_some_and(|e| e.contains("NOPERM")));
    let other_row = exact.cmd(&["EMQ.ENQUEUE", "q", "A", "JOB3", "y"]);
    assert!(
        other_row.err().is_some_and(|e| e.contains("NOPERM")),
        "a job row is a key too"
    );
    // A module's call that does not run as the user is the module's own.
    assert_eq!(
        narrow.cmd(&["CALLER.CALL", "E", "EMQ.ENQUEUE", "q", "A", "JOB4", "m"]),
        Ok(Value::Int(1))
    );
}

#[test]
fn counters_count_client_work_only() {
    let (_primary, replica, mut c, mut r) = pair();
    fill(&mut c, P, "A", 2);
    c.ok(&["EMQ.CLAIM", P, "60000"]);
    in_sync(&mut c, &mut r);
    assert_eq!(emq_stat(&mut c, "jobs_enqueued"), 2);
    assert_eq!(emq_stat(&mut c, "jobs_claimed"), 1);
    drop(replica);
}
