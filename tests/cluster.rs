//! A real cluster of three primaries on loopback, started by the test:
//! queues under many hash tags are served through a client that follows
//! MOVED, claims land on every node, a prefix without a hash tag is refused,
//! and a command sent to the wrong node gets MOVED before it waits.

mod support;

use std::collections::BTreeSet;

use support::cluster::Cluster;
use support::fixtures::served;
use support::rng::Rng;
use support::{emq_stat, info_field, Value};

fn start_cluster() -> Cluster {
    Cluster::start(3, 0, &[])
}

#[test]
fn queues_are_served_across_a_three_node_cluster() {
    let cluster = start_cluster();
    let nodes = &cluster.nodes;
    let mut cc = cluster.client();
    for i in 0..60 {
        let p = format!("emq:{{tenant{i}}}:");
        assert_eq!(
            cc.ok(&["EMQ.ENQUEUE", &p, "lane", "JOB1", "x", "JOB2", "y"]),
            Value::Int(2),
            "{p}"
        );
        cc.ok(&["EMQ.WEIGHT", &p, "lane", "2"]);
        let jobs = served(&cc.ok(&["EMQ.WCLAIM", &p, "60000"]));
        assert_eq!(jobs.len(), 2, "{p}");
        for (job, _, token, _) in jobs {
            assert_eq!(
                cc.ok(&["EMQ.COMPLETE", &p, &job, &token.to_string()]),
                Value::Int(1)
            );
        }
    }
    for node in nodes {
        assert!(
            emq_stat(&mut node.conn(), "claims") > 0,
            "node {} served no claim",
            node.port
        );
    }
    let e = cc.cmd(&["EMQ.WCLAIM", "emq:orders:", "1000"]).unwrap_err();
    assert!(e.contains("hash tag"), "{e}");
    // Sent to a node that does not own the prefix's slot: MOVED, even BLOCK.
    let owner = cluster.owner(0, "emq:{tenant0}:");
    let mut wrong = nodes[(owner + 1) % 3].conn();
    assert!(wrong
        .cmd(&["EMQ.WCLAIM", "emq:{tenant0}:", "1000"])
        .unwrap_err()
        .starts_with("MOVED"));
    assert!(wrong
        .cmd(&["EMQ.WCLAIM", "emq:{tenant0}:", "1000", "BLOCK", "0"])
        .unwrap_err()
        .starts_with("MOVED"));
    // On the right node it waits, and an ENQUEUE through the client wakes it.
    let waiter = nodes[owner].call_in_thread(&["EMQ.WCLAIM", "emq:{tenant0}:", "1000", "BLOCK", "5000"]);
    let mut owner_conn = nodes[owner].conn();
    support::wait_for("the waiter", || {
        info_field(&mut owner_conn, "clients", "blocked_clients").as_deref() == Some("1")
    });
    cc.ok(&["EMQ.ENQUEUE", "emq:{tenant0}:", "lane", "JOBlate", "x"]);
    assert_eq!(served(&waiter.join().unwrap().unwrap())[0].0, "JOBlate");
}

/// The module's hash-tag rule checked against the server's own slots: a
/// prefix is accepted exactly when every key the module derives from it
/// lands in the prefix's slot, as `CLUSTER KEYSLOT` computes it.
#[test]
fn a_prefix_is_accepted_exactly_when_its_keys_share_its_slot() {
    let cluster = start_cluster();
    let mut c = cluster.nodes[0].conn();
    let mut cc = cluster.client();
    let mut rng = Rng::new(7);
    let (mut accepted, mut refused) = (0, 0);
    for _ in 0..300 {
        let len = rng.range(1, 10) as usize;
        let prefix: String = (0..len)
            .map(|_| ['{', '}', 'a', 'b'][rng.below(4) as usize])
            .collect();
        let derived = [
            "ring",
            "active",
            "job:{x}",
            "g:x{y}:pending",
            "g:}{z}:pending",
            "g:{}:pending",
        ];
        let own = c.int(&["CLUSTER", "KEYSLOT", &prefix]);
        let shared = derived
            .iter()
            .all(|s| c.int(&["CLUSTER", "KEYSLOT", &format!("{prefix}{s}")]) == own);
        match cc.cmd(&["EMQ.LANE", &prefix, "x"]) {
            Ok(_) => {
                assert!(shared, "{prefix:?} accepted, but its keys spread over slots");
                accepted += 1;
            }
            Err(e) => {
                assert!(e.contains("hash tag"), "{prefix:?}: {e}");
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

#[test]
fn lanes_and_repair_work_through_a_cluster() {
    let cluster = start_cluster();
    let mut cc = cluster.client();
    for t in 0..6 {
        let p = format!("emq:{{t{t}}}:");
        for l in 0..300 {
            cc.ok(&["EMQ.ENQUEUE", &p, &format!("lane{l}"), &format!("JOB{l}"), "x"]);
        }
    }
    let p = "emq:{t3}:";
    cc.ok(&["DEL", &format!("{p}ring")]);
    let mut cursor = "0".to_string();
    let mut lanes = BTreeSet::new();
    loop {
        let r = cc.ok(&["EMQ.LANES", p, &cursor, "COUNT", "50"]);
        lanes.extend(r.items()[1].texts());
        cursor = r.items()[0].text();
        if cursor == "0" {
            break;
        }
    }
    let expect: BTreeSet<String> = (0..300).map(|l| format!("lane{l}")).collect();
    assert_eq!(lanes, expect, "every lane of {p}, and no other queue's");
    for lane in &lanes {
        cc.ok(&["EMQ.REPAIR", p, lane]);
    }
    assert_eq!(
        cc.ok(&["LLEN", &format!("{p}ring")]),
        Value::Int(300),
        "every lane back in the ring"
    );
    let mut got = BTreeSet::new();
    for _ in 0..300 {
        got.insert(served(&cc.ok(&["EMQ.CLAIM", p, "60000"]))[0].3.clone());
    }
    assert_eq!(got, expect, "the next claims serve every lane");
}
