//! A queue's slot moving between the primaries of a real cluster while
//! workers claim and complete and others wait: by atomic slot migration
//! (`CLUSTER MIGRATESLOTS`, Valkey 9), and key by key (`SETSLOT` and
//! `MIGRATE`, every server), where a command refuses with `TRYAGAIN` until
//! the move is done. Nothing is lost, nothing leased twice, the queue is
//! sound on its new node and served there, and a waiter on the slot is
//! answered as a core `BLPOP` waiting beside it is (docs/production.md, "A
//! cluster").

mod support;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use support::cluster::{tag_on, Client, Cluster, Met};
use support::fixtures::served;
use support::invariants::check_invariants;
use support::snapshot::snapshot;
use support::{emq_stat, info_field, Conn, Reply, Value};

/// How many times each job was completed.
type Done = Arc<Mutex<HashMap<String, u32>>>;

/// A worker: claims from `p` and completes what it got until `stop`.
fn worker(mut cc: Client, p: String, done: Done, stop: Arc<AtomicBool>) -> JoinHandle<Met> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let jobs = served(&cc.ok(&["EMQ.WCLAIM", &p, "60000"]));
            if jobs.is_empty() {
                std::thread::sleep(Duration::from_millis(5));
            }
            for (job, _, token, _) in jobs {
                let r = cc.ok(&["EMQ.COMPLETE", &p, &job, &token.to_string()]);
                assert_eq!(r, Value::Int(1), "{job}");
                *done.lock().unwrap().entry(job).or_default() += 1;
            }
        }
        cc.met
    })
}

fn enqueue(c: &mut Conn, p: &str, from: usize, to: usize) {
    let cmds: Vec<Vec<Vec<u8>>> = (from..to)
        .map(|i| {
            [
                "EMQ.ENQUEUE",
                p,
                &format!("lane{}", i % 12),
                &format!("JOB{i}"),
                "x",
            ]
            .iter()
            .map(|a| a.as_bytes().to_vec())
            .collect()
        })
        .collect();
    for r in c.pipeline(&cmds).unwrap() {
        assert_eq!(r, Ok(Value::Int(1)));
    }
}

/// A client waiting on `args` from its own connection: its reply and when
/// it came.
fn waiting(port: u16, args: &[&str]) -> JoinHandle<(Reply, Instant)> {
    let mut c = Conn::open(port).unwrap();
    let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    std::thread::spawn(move || {
        let r = c.cmd(&args.iter().map(String::as_str).collect::<Vec<_>>());
        (r, Instant::now())
    })
}

fn blocked(c: &mut Conn) -> u64 {
    info_field(c, "clients", "blocked_clients")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The queue of a slot, its waiters and workers, ready to move.
struct Scene {
    cluster: Cluster,
    p: String,
    tag: String,
    done: Done,
    stop: Arc<AtomicBool>,
    workers: Vec<JoinHandle<Met>>,
    waiter: JoinHandle<(Reply, Instant)>,
    core: JoinHandle<(Reply, Instant)>,
}

const JOBS: usize = 1500;

fn scene(mode: &str) -> Scene {
    let cluster = Cluster::start(2, 0, &[]);
    for node in &cluster.nodes {
        node.conn().ok(&["CONFIG", "SET", "emq.replicate", mode]);
    }
    let mut a = cluster.nodes[0].conn();
    let tag = tag_on(&mut a, 0, 2, 0);
    let p = format!("emq:{{{tag}}}:");
    enqueue(&mut a, &p, 0, JOBS);
    // Waiting on the same slot: an idle queue's claim, and a core BLPOP.
    let idle = format!("emq:{{{tag}}}:idle:");
    let waiter = waiting(
        cluster.nodes[0].port,
        &["EMQ.WCLAIM", &idle, "60000", "BLOCK", "30000"],
    );
    let core = waiting(
        cluster.nodes[0].port,
        &["BLPOP", &format!("{{{tag}}}:list"), "30"],
    );
    support::wait_for("two waiters", || blocked(&mut a) == 2);
    let done: Done = Arc::default();
    let stop = Arc::new(AtomicBool::new(false));
    let workers = (0..3)
        .map(|_| worker(cluster.client(), p.clone(), done.clone(), stop.clone()))
        .collect();
    support::wait_for("work under way", || done.lock().unwrap().len() >= 200);
    Scene {
        cluster,
        p,
        tag,
        done,
        stop,
        workers,
        waiter,
        core,
    }
}

impl Scene {
    /// After the move: the waiters were answered alike within a second of
    /// `moved`, with the new owner's address; every job enqueued is
    /// completed exactly once; the queue is sound on node 1, and node 0
    /// keeps no key of its slot. The workers' encounters.
    fn check(self, moved: Instant, more: usize) -> Met {
        let new_port = self.cluster.nodes[1].port;
        let (w, w_at) = self.waiter.join().unwrap();
        let (c, c_at) = self.core.join().unwrap();
        let (w, c) = (w.unwrap_err(), c.unwrap_err());
        assert_eq!(w, c, "the claim waiting is answered as BLPOP is");
        assert!(
            w.starts_with("MOVED ") && w.ends_with(&format!(":{new_port}")),
            "{w}"
        );
        for at in [w_at, c_at] {
            let late = at.saturating_duration_since(moved);
            assert!(late < Duration::from_secs(1), "answered {late:?} after the move");
        }
        let total = JOBS + more;
        support::wait_for("every job completed", || self.done.lock().unwrap().len() >= total);
        self.stop.store(true, Ordering::Relaxed);
        let mut met = Met::default();
        for w in self.workers {
            let m = w.join().unwrap();
            met.moved += m.moved;
            met.ask += m.ask;
            met.tryagain += m.tryagain;
        }
        let done = self.done.lock().unwrap();
        assert_eq!(done.len(), total);
        let twice: Vec<_> = done.iter().filter(|(_, n)| **n != 1).collect();
        assert!(twice.is_empty(), "completed more than once: {twice:?}");
        let mut b = self.cluster.nodes[1].conn();
        check_invariants(&snapshot(&mut b, &self.p)).unwrap();
        let slot = b.int(&["CLUSTER", "KEYSLOT", &self.p]).to_string();
        let mut a = self.cluster.nodes[0].conn();
        assert_eq!(a.int(&["CLUSTER", "COUNTKEYSINSLOT", &slot]), 0);
        // The queue is served on its new node: a lease that runs out there
        // is returned by that node's timer to a claim waiting there.
        let mut cc = self.cluster.client();
        cc.ok(&["EMQ.ENQUEUE", &self.p, "late", "JOBlate", "x"]);
        assert_eq!(served(&cc.ok(&["EMQ.WCLAIM", &self.p, "1000"]))[0].0, "JOBlate");
        let again = waiting(new_port, &["EMQ.WCLAIM", &self.p, "60000", "BLOCK", "5000"]);
        let (r, _) = again.join().unwrap();
        assert_eq!(served(&r.unwrap())[0].0, "JOBlate");
        assert!(emq_stat(&mut b, "jobs_reaped_by_timer") >= 1);
        met
    }
}

fn has_atomic_migration(c: &mut Conn) -> bool {
    let info = c.ok(&["COMMAND", "INFO", "CLUSTER|MIGRATESLOTS"]);
    info.items().first().is_some_and(|i| *i != Value::Nil)
}

#[test]
fn a_queue_moves_by_atomic_slot_migration_while_it_is_worked() {
    if !has_atomic_migration(&mut support::Server::start().conn()) {
        eprintln!("this server has no CLUSTER MIGRATESLOTS: the key-by-key test covers it");
        return;
    }
    for mode in ["effects", "command"] {
        let s = scene(mode);
        let mut a = s.cluster.nodes[0].conn();
        assert!(
            emq_stat(&mut a, "stats_lanes") > 0,
            "figures recorded on the source"
        );
        let slot = a.int(&["CLUSTER", "KEYSLOT", &s.p]).to_string();
        let target = s.cluster.id(1);
        // A queue of the same slot that nobody works: it moves whole.
        let still = format!("emq:{{{}}}:still:", s.tag);
        enqueue(&mut a, &still, 0, 100);
        let before = snapshot(&mut a, &still);
        // Jobs enqueued while the slot moves, through the cluster client.
        let mut producer = s.cluster.client();
        let p = s.p.clone();
        let produced = std::thread::spawn(move || {
            for i in JOBS..JOBS + 300 {
                producer.ok(&["EMQ.ENQUEUE", &p, "moving", &format!("JOB{i}"), "x"]);
            }
        });
        a.ok(&[
            "CLUSTER",
            "MIGRATESLOTS",
            "SLOTSRANGE",
            &slot,
            &slot,
            "NODE",
            &target,
        ]);
        support::wait_for("the migration", || {
            let m = a.ok(&["CLUSTER", "GETSLOTMIGRATIONS"]).render();
            m.contains("success")
        });
        let moved = Instant::now();
        // The module's keys moved as ordinary keys: no module type.
        let mut b = s.cluster.nodes[1].conn();
        let keys = b.ok(&["KEYS", &format!("{still}*")]).texts();
        assert!(keys.len() > 10, "{keys:?}");
        for key in keys {
            let t = b.ok(&["TYPE", &key]).text();
            assert!(
                ["hash", "zset", "list", "string", "set"].contains(&t.as_str()),
                "{key}: {t}"
            );
        }
        assert_eq!(snapshot(&mut b, &still), before);
        produced.join().unwrap();
        // The source forgot the slot's figures; the target counts anew.
        assert_eq!(emq_stat(&mut a, "stats_lanes"), 0);
        let met = s.check(moved, 300);
        eprintln!("{mode}: atomic migration under load; the workers met {met:?}");
    }
}

#[test]
fn a_queue_moved_key_by_key_refuses_with_tryagain_and_loses_nothing() {
    let s = scene("effects");
    let (mut a, mut b) = (s.cluster.nodes[0].conn(), s.cluster.nodes[1].conn());
    let slot = a.int(&["CLUSTER", "KEYSLOT", &s.p]).to_string();
    let (ida, idb) = (s.cluster.id(0), s.cluster.id(1));
    let port_b = s.cluster.nodes[1].port.to_string();
    b.ok(&["CLUSTER", "SETSLOT", &slot, "IMPORTING", &ida]);
    a.ok(&["CLUSTER", "SETSLOT", &slot, "MIGRATING", &idb]);
    // A command let in by ASKING on the importing node changes nothing.
    let mut asking = Conn::open(s.cluster.nodes[1].port).unwrap();
    asking.ok(&["ASKING"]);
    let e = asking
        .cmd(&["EMQ.ENQUEUE", &s.p, "x", "JOBasked", "x"])
        .unwrap_err();
    assert!(e.starts_with("TRYAGAIN"), "{e}");
    loop {
        let keys = a.ok(&["CLUSTER", "GETKEYSINSLOT", &slot, "25"]).texts();
        if keys.is_empty() {
            break;
        }
        let mut args = vec!["MIGRATE", "127.0.0.1", &port_b, "", "0", "5000", "KEYS"];
        args.extend(keys.iter().map(String::as_str));
        a.ok(&args);
        std::thread::sleep(Duration::from_millis(10));
    }
    for c in [&mut b, &mut a] {
        c.ok(&["CLUSTER", "SETSLOT", &slot, "NODE", &idb]);
    }
    let moved = Instant::now();
    assert_eq!(b.int(&["EXISTS", &format!("{}job:JOBasked", s.p)]), 0);
    let met = s.check(moved, 0);
    eprintln!("key by key: the workers met {met:?}");
    assert!(met.tryagain > 0, "the workers were asked to try again: {met:?}");
}
