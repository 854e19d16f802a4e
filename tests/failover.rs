//! Failover in a real cluster (three primaries, each with a replica): a
//! primary killed -9 while workers run is replaced by its replica, every
//! job whose enqueue a replica acknowledged (`WAIT`) is completed, every
//! queue is sound, and the jobs run twice (handed to a worker twice: a
//! claim or a completion the replica had not received when the primary
//! died) are counted and bounded. And a waiter never
//! outlives its node's hold on its queue: a node turned replica, or reset,
//! answers it as it answers a core `BLPOP` waiting beside it
//! (docs/production.md, "A cluster").

mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use support::cluster::{tag_on, Cluster};
use support::fixtures::served;
use support::invariants::check_invariants;
use support::snapshot::snapshot;
use support::{info_field, Conn, Reply, Value};

const QUEUES_PER_PRIMARY: usize = 4;
const JOBS_PER_QUEUE: usize = 60;
const WORKERS: usize = 4;
/// The most jobs the test allows run twice: each worker holds one job at a
/// time (weight 1), so at the kill at most its job in hand and the one it
/// completed just before (not yet on the replica) come back.
const TWICE_BOUND: usize = 2 * WORKERS;

fn role(port: u16) -> Option<String> {
    let mut c = Conn::open(port).ok()?;
    info_field(&mut c, "replication", "role")
}

#[test]
fn a_primary_killed_fails_over_and_every_acknowledged_job_is_done() {
    let cluster = Cluster::start(3, 1, &["--cluster-replica-validity-factor", "0"]);
    let mut c = cluster.nodes[0].conn();
    let queues: Vec<String> = (0..3)
        .flat_map(|i| (0..QUEUES_PER_PRIMARY).map(move |k| (i, k)))
        .map(|(i, k)| format!("emq:{{{}}}:", tag_on(&mut c, i, 3, k)))
        .collect();
    // Each job's runs (the claims that handed it to a worker) and whether
    // one of them completed it.
    let done: Arc<Mutex<HashMap<String, (u32, bool)>>> = Arc::default();
    let acked: Arc<Mutex<Vec<String>>> = Arc::default();
    let produced = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let producing = Arc::new(AtomicBool::new(true));
    let producer = {
        let (mut cc, queues, acked, produced) =
            (cluster.client(), queues.clone(), acked.clone(), produced.clone());
        let producing = producing.clone();
        std::thread::spawn(move || {
            for i in 0..JOBS_PER_QUEUE {
                if !producing.load(Ordering::Relaxed) {
                    break;
                }
                for (q, p) in queues.iter().enumerate() {
                    let job = format!("JOB{q}-{i}");
                    let (r, ok) = cc.cmd_acked(&["EMQ.ENQUEUE", p, &format!("lane{}", i % 3), &job, "x"]);
                    if r == Ok(Value::Int(1)) && ok {
                        acked.lock().unwrap().push(job);
                    }
                    produced.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    };
    let workers: Vec<JoinHandle<()>> = (0..WORKERS)
        .map(|w| {
            let (mut cc, queues, done, stop) = (cluster.client(), queues.clone(), done.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut at = w;
                while !stop.load(Ordering::Relaxed) {
                    at = (at + 1) % queues.len();
                    let p = &queues[at];
                    let Ok(got) = cc.cmd(&["EMQ.WCLAIM", p, "2000"]) else {
                        continue;
                    };
                    for (job, _, token, _) in served(&got) {
                        done.lock().unwrap().entry(job.clone()).or_default().0 += 1;
                        // After the failover a COMPLETE may answer 0 or
                        // EMQSTALE (another run of the job ended it).
                        if cc.cmd(&["EMQ.COMPLETE", p, &job, &token.to_string()]) == Ok(Value::Int(1)) {
                            done.lock().unwrap().entry(job).or_default().1 = true;
                        }
                    }
                }
            })
        })
        .collect();
    support::wait_for("work under way", || {
        produced.load(Ordering::Relaxed) > queues.len() * JOBS_PER_QUEUE / 3
            && done.lock().unwrap().values().filter(|d| d.1).count() > 100
    });
    let victim = cluster.owner(1, &queues[0]);
    let heir = cluster
        .nodes
        .iter()
        .position(|n| {
            let mut c = n.conn();
            info_field(&mut c, "replication", "master_port").as_deref()
                == Some(&cluster.nodes[victim].port.to_string())
        })
        .expect("the victim's replica");
    cluster.nodes[victim].kill9();
    let killed = Instant::now();
    support::wait_for("the replica promoted", || {
        role(cluster.nodes[heir].port).as_deref() == Some("master")
    });
    let failover = killed.elapsed();
    assert!(failover < Duration::from_secs(20), "failover took {failover:?}");
    // Enqueues go on through the failover and a little after it (the heir
    // has no replica left to acknowledge them: each waits out its WAIT).
    std::thread::sleep(Duration::from_millis(300));
    producing.store(false, Ordering::Relaxed);
    producer.join().unwrap();
    let acked = acked.lock().unwrap().clone();
    support::wait_for("every acknowledged job done", || {
        let done = done.lock().unwrap();
        acked.iter().all(|j| done.get(j).is_some_and(|d| d.1))
    });
    stop.store(true, Ordering::Relaxed);
    for w in workers {
        w.join().unwrap();
    }
    let done = done.lock().unwrap();
    let twice = done.values().filter(|d| d.0 > 1).count();
    let completed = done.values().filter(|d| d.1).count();
    eprintln!(
        "failover in {:.1} s; {} jobs acknowledged of {} enqueued, {completed} completed, {twice} run twice",
        failover.as_secs_f64(),
        acked.len(),
        produced.load(Ordering::Relaxed),
    );
    assert!(twice <= TWICE_BOUND, "{twice} jobs run twice");
    assert!(
        acked.len() > produced.load(Ordering::Relaxed) / 2,
        "most enqueues were acknowledged"
    );
    for p in &queues {
        let owner = cluster.owner(heir, p);
        check_invariants(&snapshot(&mut cluster.nodes[owner].conn(), p))
            .unwrap_or_else(|e| panic!("{p}: {e}"));
    }
}

/// A lane claim, a flat claim and a core BLPOP waiting on the slot of `tag`
/// at `port`.
fn waiters(port: u16, tag: &str) -> [JoinHandle<(Reply, Instant)>; 3] {
    let idle = format!("emq:{{{tag}}}:");
    let list = format!("{{{tag}}}:list");
    let block = |cmd: &str| {
        vec![
            cmd.to_string(),
            idle.clone(),
            "60000".into(),
            "BLOCK".into(),
            "30000".into(),
        ]
    };
    let calls = [
        block("EMQ.WCLAIM"),
        block("EMQ.QCLAIM"),
        vec!["BLPOP".to_string(), list, "30".into()],
    ];
    let handles = calls.map(|args| {
        let mut c = Conn::open(port).unwrap();
        std::thread::spawn(move || {
            let r = c.cmd(&args.iter().map(String::as_str).collect::<Vec<_>>());
            (r, Instant::now())
        })
    });
    let mut c = Conn::open(port).unwrap();
    support::wait_for("three waiters", || {
        info_field(&mut c, "clients", "blocked_clients").as_deref() == Some("3")
    });
    handles
}

/// Every waiter answered within a second of `at`, the claims with the error
/// BLPOP gets.
fn answered_alike(waiting: [JoinHandle<(Reply, Instant)>; 3], at: Instant) -> String {
    let [lane, flat, core] = waiting.map(|w| w.join().unwrap());
    for (_, when) in [&lane, &flat, &core] {
        let late = when.saturating_duration_since(at);
        assert!(late < Duration::from_secs(1), "answered {late:?} after");
    }
    let core = core.0.unwrap_err();
    for claim in [lane.0.unwrap_err(), flat.0.unwrap_err()] {
        assert_eq!(
            claim.split(' ').next(),
            core.split(' ').next(),
            "a claim got {claim:?}, BLPOP {core:?}"
        );
    }
    core
}

#[test]
fn a_waiter_is_answered_when_its_node_turns_replica_or_is_reset() {
    let cluster = Cluster::start(2, 1, &[]);
    let mut c = cluster.nodes[0].conn();
    // Node 0 handed over to its replica (node 2): a manual failover.
    let tag = tag_on(&mut c, 0, 2, 0);
    let waiting = waiters(cluster.nodes[0].port, &tag);
    cluster.nodes[2].conn().ok(&["CLUSTER", "FAILOVER"]);
    support::wait_for("node 0 a replica", || {
        role(cluster.nodes[0].port).as_deref() == Some("slave")
    });
    let e = answered_alike(waiting, Instant::now());
    eprintln!("turned replica: {e}");
    // A replica reads its primary's queues (READONLY): its slot is held.
    let mut replica = cluster.nodes[0].conn();
    replica.ok(&["READONLY"]);
    let p = format!("emq:{{{tag}}}:");
    support::wait_for("the replica's link", || {
        info_field(&mut replica, "replication", "master_link_status").as_deref() == Some("up")
    });
    assert!(replica.ok(&["EMQ.QUEUE", &p]).field("pending").is_some());
    // Node 1 reset (it holds no key): it serves no slot any more.
    let tag = tag_on(&mut c, 1, 2, 0);
    let waiting = waiters(cluster.nodes[1].port, &tag);
    cluster.nodes[1].conn().ok(&["CLUSTER", "RESET", "SOFT"]);
    let e = answered_alike(waiting, Instant::now());
    eprintln!("reset: {e}");
}
