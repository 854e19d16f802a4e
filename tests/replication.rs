//! Replication and persistence (docs/production.md): in both modes a replica
//! and an AOF reload reach the primary's `DEBUG DIGEST` — effects (the
//! default; replicas and AOF readers need no module) and `command` (one
//! `EMQ.TURN` a served turn, the clock-free commands as themselves).

mod support;

use std::time::Duration;

use support::drive::drive;
use support::fixtures::{fill, served};
use support::replication::{digest, in_sync, replicate_into, replicated_and_persisted};
use support::{info_field, wait_for, Server, Value};

const QUEUES: [&str; 3] = ["r1{a}:", "r2{b}:", "r3{c}:"];

#[test]
fn a_replica_without_the_module_and_the_aof_follow_a_random_stream() {
    replicated_and_persisted(&[], false, |_, c| {
        for (i, q) in QUEUES.iter().enumerate() {
            drive(c, q, 7 + i as u64, 1_000);
        }
    });
}

#[test]
fn in_command_mode_a_replica_with_the_module_and_the_aof_follow() {
    replicated_and_persisted(&["--emq.replicate", "command"], true, |_, c| {
        for (i, q) in QUEUES.iter().enumerate() {
            drive(c, q, 70 + i as u64, 1_000);
        }
    });
}

#[test]
fn a_served_waiter_replicates_in_both_modes() {
    for mode in ["effects", "command"] {
        let args = ["--emq.replicate", mode];
        replicated_and_persisted(&args, mode == "command", |server, c| {
            let p = "w{q}:";
            let w = server.call_in_thread(&["EMQ.WCLAIM", p, "60000", "BLOCK", "0"]);
            wait_for("the waiter", || support::emq_stat(c, "blocked_clients") == 1);
            fill(c, p, "a", 2);
            assert_eq!(served(&w.join().unwrap().unwrap()).len(), 1);
        });
    }
}

/// A woken claim returns a lease that ran out before the timer saw it (a
/// script or an operator moved its deadline), then asks `P paused` about a
/// lane through a call. On Redis 7.0 a call made while a woken client is
/// served sends the writes made before it nowhere unless it allows
/// replication: the returned lease stayed leased on the replica and in the
/// AOF.
#[test]
fn a_woken_claim_that_returns_a_lease_and_then_reads_the_paused_set_replicates_both() {
    for mode in ["effects", "command"] {
        let args = ["--emq.replicate", mode];
        replicated_and_persisted(&args, mode == "command", |server, c| {
            let p = "v{q}:";
            fill(c, p, "a", 1);
            let job = served(&c.ok(&["EMQ.CLAIM", p, "60000"]))[0].0.clone();
            c.ok(&["EMQ.PAUSE", p, "z"]);
            fill(c, p, "y", 1);
            c.ok(&["EMQ.PAUSE", p, "y", "FOR", "60000"]);
            let w = server.call_in_thread(&["EMQ.WCLAIM", p, "60000", "BLOCK", "0"]);
            wait_for("the waiter", || support::emq_stat(c, "blocked_clients") == 1);
            // Ended before the timer looks: the lease, and y's timed pause
            // (whose end is a second call, SREM, after the lease went back).
            c.int(&["ZADD", &format!("{p}active"), "1", &job]);
            c.int(&["ZADD", &format!("{p}gnext"), "1", "y"]);
            fill(c, p, "b", 1);
            let jobs = served(&w.join().unwrap().unwrap());
            assert_eq!(jobs.len(), 1, "{mode}: the waiter is served");
            assert_eq!(
                c.int(&["ZCARD", &format!("{p}active")]),
                1,
                "{mode}: the lease went back"
            );
            assert_eq!(
                c.int(&["SISMEMBER", &format!("{p}paused"), "y"]),
                0,
                "{mode}: y's pause ended"
            );
        });
    }
}

#[test]
fn batches_of_every_size_replicate_as_written() {
    for mode in ["effects", "command"] {
        let args = ["--emq.replicate", mode];
        replicated_and_persisted(&args, mode == "command", |_, c| {
            for k in 1..=12 {
                let p = format!("b{k}{{q}}:");
                fill(c, &p, "a", k);
                let jobs = served(&c.ok(&["EMQ.BCLAIM", &p, "60000"]));
                assert_eq!(jobs.len(), k);
                for (i, (job, _, token, _)) in jobs.iter().enumerate() {
                    if i % 2 == 0 {
                        c.int(&["EMQ.COMPLETE", &p, job, &token.to_string()]);
                    } else {
                        c.ok(&["EMQ.RETRY", &p, job, &token.to_string(), "0", "5", "e"]);
                    }
                }
            }
        });
    }
}

#[test]
fn a_config_that_differs_on_the_replica_cannot_make_it_diverge() {
    for mode in ["effects", "command"] {
        let primary = Server::start_with(&["--emq.replicate", mode]);
        let replica = Server::start_with(&["--emq.max-claim", "1", "--emq.job-kind", "XYZ"]);
        let mut r = replicate_into(&replica, &primary);
        let mut p = primary.conn();
        fill(&mut p, "q:", "a", 3);
        assert_eq!(
            served(&p.ok(&["EMQ.BCLAIM", "q:", "1000"])).len(),
            3,
            "the primary's cap is 1000"
        );
        in_sync(&mut p, &mut r);
        assert_eq!(
            digest(&mut p),
            digest(&mut r),
            "{mode}: a turn carries its K, ENQUEUE its kind"
        );
    }
}

#[test]
fn the_aof_rewrites_to_the_same_keyspace() {
    let server = Server::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let mut c = server.conn();
    drive(&mut c, "aof{q}:", 11, 1_000);
    c.ok(&["BGREWRITEAOF"]);
    wait_for("the AOF rewrite", || {
        info_field(&mut c, "persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
            && info_field(&mut c, "persistence", "aof_rewrite_scheduled").as_deref() == Some("0")
    });
    drive(&mut c, "aof{q}:", 12, 300);
    let before = digest(&mut c);
    let server = server.restart(&["--appendonly", "yes"]);
    assert_eq!(
        digest(&mut server.conn()),
        before,
        "the rewritten AOF plus its tail"
    );
}

#[test]
fn turns_in_command_mode_are_one_internal_command_each() {
    let server = Server::start_with(&[
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--emq.replicate",
        "command",
    ]);
    let mut c = server.conn();
    fill(&mut c, "q:", "a", 2);
    c.ok(&["EMQ.WEIGHT", "q:", "a", "2"]);
    c.ok(&["EMQ.WCLAIM", "q:", "60000"]);
    std::thread::sleep(Duration::from_millis(100));
    let aof: String = std::fs::read_dir(server.dir.join("appendonlydir"))
        .unwrap()
        .filter_map(|e| std::fs::read(e.ok()?.path()).ok())
        .map(|b| String::from_utf8_lossy(&b).into_owned())
        .collect();
    assert!(aof.contains("EMQ.TURN"), "the turn is in the AOF");
    assert!(aof.contains("EMQ.ENQUEUE"), "ENQUEUE replicates as itself");
    assert!(
        !aof.contains("ZPOPMIN") && !aof.contains("LMOVE"),
        "no effects of the turn"
    );
    let r = c.cmd(&["EMQ.TURN", "q:", "a", "1", "1", "0"]);
    assert!(r.unwrap_err().contains("internal"), "clients cannot call it");
    let _ = Value::Nil;
}

#[test]
fn emq_writes_count_towards_save_points() {
    let server = Server::start();
    let mut c = server.conn();
    let changes = |c: &mut support::Conn| -> i64 {
        info_field(c, "persistence", "rdb_changes_since_last_save")
            .unwrap()
            .parse()
            .unwrap()
    };
    let before = changes(&mut c);
    fill(&mut c, "s:", "a", 1);
    c.ok(&["EMQ.CLAIM", "s:", "1000"]);
    assert!(changes(&mut c) > before, "writes counted");
}
