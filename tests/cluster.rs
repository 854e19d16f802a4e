//! A real cluster of three primaries on loopback, started by the test:
//! queues under many hash tags are served through a cluster-aware client,
//! claims land on every node, a prefix without a hash tag is refused, and a
//! command sent to the wrong node gets MOVED.

mod common;

use std::time::{Duration, Instant};

use common::*;

const SLOTS: [(u16, u16); 3] = [(0, 5460), (5461, 10922), (10923, 16383)];

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One cluster at a time: a bus port is picked free and then released, so
/// two clusters forming at once could take each other's ports.
static FORMING: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn start_cluster() -> Vec<Server> {
    let _one_at_a_time = FORMING.lock().unwrap_or_else(|e| e.into_inner());
    let buses: Vec<String> = (0..3).map(|_| free_port().to_string()).collect();
    let nodes: Vec<Server> = buses
        .iter()
        .map(|bus| {
            Server::start_with(&[
                "--cluster-enabled",
                "yes",
                "--cluster-port",
                bus,
                "--cluster-node-timeout",
                "5000",
            ])
        })
        .collect();
    for (node, (lo, hi)) in nodes.iter().zip(SLOTS) {
        let mut c = node.conn();
        let r = cmd(
            &mut c,
            &["CLUSTER", "ADDSLOTSRANGE", &lo.to_string(), &hi.to_string()],
        );
        assert!(r.err().is_none(), "{r:?}");
    }
    let mut first = nodes[0].conn();
    for (node, bus) in nodes.iter().zip(&buses).skip(1) {
        let port = node.port.to_string();
        let r = cmd(&mut first, &["CLUSTER", "MEET", "127.0.0.1", &port, bus]);
        assert!(r.err().is_none(), "{r:?}");
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    for node in &nodes {
        let mut c = node.conn();
        loop {
            let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut c).unwrap();
            if info.contains("cluster_state:ok") && info.contains("cluster_known_nodes:3") {
                break;
            }
            assert!(Instant::now() < deadline, "the cluster did not form: {info}");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    nodes
}

#[test]
fn queues_are_served_across_a_three_node_cluster() {
    let nodes = start_cluster();
    let client =
        redis::cluster::ClusterClient::new(vec![format!("redis://127.0.0.1:{}/", nodes[0].port)]).unwrap();
    let mut cc = client.get_connection().unwrap();
    for i in 0..60 {
        let p = format!("emq:{{tenant{i}}}:");
        let added: i64 = redis::cmd("EMQ.ENQUEUE")
            .arg(&p)
            .arg("lane")
            .arg(1)
            .arg("j1")
            .arg(2)
            .arg("j2")
            .query(&mut cc)
            .unwrap();
        assert_eq!(added, 2, "{p}");
        let _: () = redis::cmd("EMQ.WEIGHT")
            .arg(&p)
            .arg("lane")
            .arg(2)
            .query(&mut cc)
            .unwrap();
        let claim: Vec<Value> = redis::cmd("EMQ.WCLAIM")
            .arg(&p)
            .arg(60_000)
            .query(&mut cc)
            .unwrap();
        assert_eq!(claim.len(), 4, "{p}: lane, deadline and two jobs");
        let Value::Int(token) = claim[1] else {
            panic!("{claim:?}")
        };
        let acked: i64 = redis::cmd("EMQ.ACK")
            .arg(&p)
            .arg(token)
            .arg("j1")
            .arg("j2")
            .query(&mut cc)
            .unwrap();
        assert_eq!(acked, 2);
    }
    for node in &nodes {
        let claims: u64 = info_text(&mut node.conn(), "emq", "emq_claims")
            .and_then(|v| v.parse().ok())
            .unwrap();
        assert!(claims > 0, "node {} served no claim", node.port);
    }

    // A prefix without a hash tag: its keys would spread over slots.
    let refused: redis::RedisResult<Value> = redis::cmd("EMQ.WCLAIM")
        .arg("emq:orders:")
        .arg(1000)
        .query(&mut cc);
    let e = refused.expect_err("refused");
    assert!(format!("{e}").contains("hash tag"), "{e}");

    // Sent to a node that does not own the prefix's slot: MOVED.
    let slot: i64 = redis::cmd("CLUSTER")
        .arg("KEYSLOT")
        .arg("emq:{tenant0}:")
        .query(&mut nodes[0].conn())
        .unwrap();
    let owner = SLOTS
        .iter()
        .position(|(lo, hi)| (*lo as i64..=*hi as i64).contains(&slot))
        .unwrap();
    let mut wrong = nodes[(owner + 1) % 3].conn();
    let r = cmd(&mut wrong, &["EMQ.WCLAIM", "emq:{tenant0}:", "1000"]);
    assert!(r.err().is_some_and(|e| e.starts_with("MOVED")), "{r:?}");
    // A blocking claim is redirected before it waits.
    let r = cmd(
        &mut wrong,
        &["EMQ.WCLAIM", "emq:{tenant0}:", "1000", "BLOCK", "0"],
    );
    assert!(r.err().is_some_and(|e| e.starts_with("MOVED")), "{r:?}");
    // On the right node it waits, and an ENQUEUE through the cluster client wakes it.
    let mut right = nodes[owner].conn();
    let waiter = std::thread::spawn(move || {
        cmd(
            &mut right,
            &["EMQ.WCLAIM", "emq:{tenant0}:", "1000", "BLOCK", "5000"],
        )
    });
    let mut owner_conn = nodes[owner].conn();
    let deadline = Instant::now() + Duration::from_secs(5);
    while info_text(&mut owner_conn, "clients", "blocked_clients").as_deref() != Some("1") {
        assert!(Instant::now() < deadline, "the waiter never blocked");
        std::thread::sleep(Duration::from_millis(5));
    }
    let _: i64 = redis::cmd("EMQ.ENQUEUE")
        .arg("emq:{tenant0}:")
        .arg("lane")
        .arg(9)
        .arg("late")
        .query(&mut cc)
        .unwrap();
    let (_, _, jobs) = waiter.join().unwrap().claim().expect("woken");
    assert_eq!(jobs, ["late"]);
}

/// The module's hash-tag rule checked against the server's own slots: a
/// prefix is accepted exactly when every key the module derives from it
/// (`P gring`, `P g:<lane>:pending` for lanes with braces of their own, …)
/// lands in the prefix's slot, as `CLUSTER KEYSLOT` computes it.
#[test]
fn a_prefix_is_accepted_exactly_when_its_keys_share_its_slot() {
    let nodes = start_cluster();
    let mut c = nodes[0].conn();
    let client =
        redis::cluster::ClusterClient::new(vec![format!("redis://127.0.0.1:{}/", nodes[0].port)]).unwrap();
    let mut cc = client.get_connection().unwrap();
    let mut rng = rng::Rng::new(7);
    let slot = |c: &mut redis::Connection, key: &str| -> i64 {
        redis::cmd("CLUSTER").arg("KEYSLOT").arg(key).query(c).unwrap()
    };
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..300 {
        let len = rng.range(1, 10) as usize;
        let prefix: String = (0..len)
            .map(|_| ['{', '}', 'a', 'b'][rng.below(4) as usize])
            .collect();
        let derived = [
            "gring",
            "leases",
            "jlease",
            "g:x{y}:pending",
            "g:}{z}:pending",
            "g:{}:pending",
        ];
        let own = slot(&mut c, &prefix);
        let shared = derived
            .iter()
            .all(|s| slot(&mut c, &format!("{prefix}{s}")) == own);
        let reply: redis::RedisResult<Value> = redis::cmd("EMQ.LANE").arg(&prefix).arg("x").query(&mut cc);
        match reply {
            Ok(_) => {
                assert!(shared, "{prefix:?} accepted, but its keys spread over slots");
                accepted += 1;
            }
            Err(e) => {
                assert!(format!("{e}").contains("hash tag"), "{prefix:?}: {e}");
                assert!(!shared, "{prefix:?} refused, but its keys share its slot");
                refused += 1;
            }
        }
    }
    assert!(
        accepted > 30 && refused > 30,
        "{accepted} accepted, {refused} refused"
    );
}

/// Issue 16 in a cluster: a queue's lanes are listed and repaired through a
/// cluster-aware client (the queue's keys, pending sets included, share the
/// prefix's slot), beside other queues on the same node.
#[test]
fn lanes_and_repair_work_through_a_cluster_client() {
    let nodes = start_cluster();
    let client =
        redis::cluster::ClusterClient::new(vec![format!("redis://127.0.0.1:{}/", nodes[0].port)]).unwrap();
    let mut cc = client.get_connection().unwrap();
    for t in 0..6 {
        let p = format!("emq:{{t{t}}}:");
        for l in 0..300 {
            let _: i64 = redis::cmd("EMQ.ENQUEUE")
                .arg(&p)
                .arg(format!("lane{l}"))
                .arg(1)
                .arg(format!("j{l}"))
                .query(&mut cc)
                .unwrap();
        }
    }
    let p = "emq:{t3}:";
    let _: () = redis::cmd("DEL").arg(format!("{p}gring")).query(&mut cc).unwrap();
    let mut cursor = "0".to_string();
    let mut lanes = std::collections::BTreeSet::new();
    loop {
        let (next, batch): (String, Vec<String>) = redis::cmd("EMQ.LANES")
            .arg(p)
            .arg(&cursor)
            .arg("COUNT")
            .arg(50)
            .query(&mut cc)
            .unwrap();
        lanes.extend(batch);
        cursor = next;
        if cursor == "0" {
            break;
        }
    }
    let expect: std::collections::BTreeSet<String> = (0..300).map(|l| format!("lane{l}")).collect();
    assert_eq!(lanes, expect, "every lane of {p}, and no other queue's");
    for lane in &lanes {
        let _: Value = redis::cmd("EMQ.REPAIR").arg(p).arg(lane).query(&mut cc).unwrap();
    }
    let ringed: i64 = redis::cmd("LLEN")
        .arg(format!("{p}gring"))
        .query(&mut cc)
        .unwrap();
    assert_eq!(ringed, 300, "every lane back in the ring");
    let mut served = std::collections::BTreeSet::new();
    for _ in 0..300 {
        let claim: Vec<Value> = redis::cmd("EMQ.CLAIM").arg(p).arg(60_000).query(&mut cc).unwrap();
        served.insert(text(&claim[0]));
    }
    assert_eq!(served, expect, "the next claims serve every lane");
}
