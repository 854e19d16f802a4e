//! A worker as EchoMQ runs one (`examples/worker.rs`): blocking claims,
//! COMPLETE under the attempts token, RETRY on failure; a worker killed with
//! `kill -9` mid-lease loses nothing — its jobs reach another worker at the
//! lease's end, with no reaper running.

mod support;

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use support::fixtures::fill;
use support::server::built;
use support::{emq_stat, wait_for, Server};

const P: &str = "w{q}:";

fn worker(server: &Server, max: usize, lease_ms: u64, work_ms: u64) -> Child {
    Command::new(built("worker"))
        .args([&server.port.to_string(), P, &max.to_string()])
        .env("EMQ_LEASE_MS", lease_ms.to_string())
        .env("EMQ_WORK_MS", work_ms.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the example worker")
}

#[test]
fn the_example_worker_completes_and_retries_a_queue() {
    let server = Server::start();
    let mut c = server.conn();
    let w = worker(&server, 5, 30_000, 0);
    wait_for("the worker waits", || emq_stat(&mut c, "blocked_clients") == 1);
    c.ok(&[
        "EMQ.ENQUEUE",
        P,
        "acme",
        "JOB-1",
        "one",
        "JOB-2",
        "two",
        "JOB-bad",
        "fail",
    ]);
    let out = w.wait_with_output().unwrap();
    assert!(out.status.success());
    let printed = String::from_utf8_lossy(&out.stdout);
    for line in [
        "job JOB-1 attempt 1",
        "job JOB-2 attempt 1",
        "job JOB-bad attempt 3",
    ] {
        assert!(printed.contains(line), "{line}: {printed}");
    }
    assert_eq!(
        c.int(&["ZCARD", &format!("{P}dead")]),
        1,
        "the failing job died after 3 attempts"
    );
    assert_eq!(
        support::fixtures::hget(&mut c, &format!("{P}metrics:completed"), "count").as_deref(),
        Some("2")
    );
}

#[test]
fn a_worker_killed_mid_lease_loses_nothing() {
    let server = Server::start_with(&["--emq.reap-on-claim", "0"]);
    let mut c = server.conn();
    fill(&mut c, P, "a", 3);
    c.ok(&["EMQ.WEIGHT", P, "a", "3"]);
    // The first worker takes all three and dies in the middle of the first.
    let mut doomed = worker(&server, 3, 500, 10_000);
    wait_for("the lease", || c.int(&["ZCARD", &format!("{P}active")]) == 3);
    doomed.kill().unwrap(); // SIGKILL: no goodbye
    let _ = doomed.wait();
    let second = worker(&server, 3, 30_000, 0);
    let out = second.wait_with_output().unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    for i in 1..=3 {
        assert!(
            printed.contains(&format!("job JOB-a-{i:05} attempt 2")),
            "{printed}"
        );
    }
    assert_eq!(c.int(&["EXISTS", &format!("{P}active")]), 0);
    assert!(
        emq_stat(&mut c, "jobs_reaped_by_timer") >= 3,
        "the timer returned them"
    );
    assert_eq!(emq_stat(&mut c, "jobs_reaped"), 0, "no EMQ.REAP was called");
    let _ = Duration::ZERO;
}

/// The cluster worker (`examples/cluster_worker.rs`), pointed at a node that
/// does not serve its queue, finds the owner; waiting there when the
/// queue's slot moves key by key to the other node, it is answered MOVED
/// and waits on the new owner, which serves it.
#[test]
fn the_cluster_worker_follows_its_queue_to_its_new_node() {
    let cluster = support::cluster::Cluster::start(2, 0, &[]);
    let mut a = cluster.nodes[0].conn();
    let p = format!("emq:{{{}}}:", support::cluster::tag_on(&mut a, 0, 2, 0));
    fill(&mut a, &p, "before", 2);
    let ports = format!("{},{}", cluster.nodes[1].port, cluster.nodes[0].port);
    let w = Command::new(built("cluster_worker"))
        .args([ports.as_str(), &p, "4"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the cluster worker");
    let completed = format!("{p}metrics:completed");
    wait_for("two done, and the worker waits", || {
        support::fixtures::hget(&mut a, &completed, "count").as_deref() == Some("2")
            && emq_stat(&mut a, "blocked_clients") == 1
    });
    let slot = a.int(&["CLUSTER", "KEYSLOT", &p]).to_string();
    let (ida, idb) = (cluster.id(0), cluster.id(1));
    let mut b = cluster.nodes[1].conn();
    b.ok(&["CLUSTER", "SETSLOT", &slot, "IMPORTING", &ida]);
    a.ok(&["CLUSTER", "SETSLOT", &slot, "MIGRATING", &idb]);
    let keys = a.ok(&["CLUSTER", "GETKEYSINSLOT", &slot, "1000"]).texts();
    if !keys.is_empty() {
        let port_b = cluster.nodes[1].port.to_string();
        let mut args = vec!["MIGRATE", "127.0.0.1", &port_b, "", "0", "5000", "KEYS"];
        args.extend(keys.iter().map(String::as_str));
        a.ok(&args);
    }
    for c in [&mut b, &mut a] {
        c.ok(&["CLUSTER", "SETSLOT", &slot, "NODE", &idb]);
    }
    wait_for("the worker waits on the new owner", || {
        emq_stat(&mut b, "blocked_clients") == 1
    });
    fill(&mut b, &p, "after", 2);
    let out = w.wait_with_output().unwrap();
    assert!(out.status.success());
    let printed = String::from_utf8_lossy(&out.stdout);
    for lane in ["before", "before", "after", "after"] {
        assert!(printed.contains(&format!("lane {lane} ")), "{printed}");
    }
    assert_eq!(printed.lines().count(), 4, "{printed}");
}
