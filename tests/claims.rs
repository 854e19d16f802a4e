//! The claims (EMQ.CLAIM, WCLAIM, BCLAIM): EchoMQ's @gclaim, @gwclaim and
//! @gbclaim on its own keys — the turn, the K clamp, the replies, the ring
//! and the wake — each checked on the native command and on its twin.

mod support;

use support::fixtures::{fill, hget, hset, ring, row, served, zscore};
use support::twins::Twins;
use support::{Conn, Server, Value};

/// Runs `test` on the native commands (prefix `n{q}:`) and then on the
/// twins as EchoMQ's host calls them (prefix `l{q}:`), on one server.
fn both(test: impl Fn(&mut Conn, &dyn Fn(&mut Conn, &str, &[&str]) -> support::Reply, &str)) {
    let server = Server::start();
    let mut c = server.conn();
    let twins = Twins::load(&mut c);
    let native = |c: &mut Conn, name: &str, args: &[&str]| {
        let mut full = vec![format!("EMQ.{}", name.to_uppercase())];
        full.extend(args.iter().map(|a| a.to_string()));
        c.cmd(&full.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let lua = |c: &mut Conn, name: &str, args: &[&str]| {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        twins.like_native(c, name, &bytes)
    };
    test(&mut c, &native, "n{q}:");
    test(&mut c, &lua, "l{q}:");
}

#[test]
fn weight_5_depth_3_headroom_4_serves_3() {
    both(|c, emq, p| {
        fill(c, p, "a", 3);
        emq(c, "weight", &[p, "a", "5"]).unwrap();
        emq(c, "limit", &[p, "a", "6"]).unwrap();
        hset(c, &format!("{p}gactive"), "a", "2");
        let reply = emq(c, "wclaim", &[p, "30000"]).unwrap();
        let jobs = served(&reply);
        assert_eq!(jobs.len(), 3, "K = min(5, 3, 6 - 2) = 3: {reply:?}");
        assert_eq!(jobs[0], ("JOB-a-00001".into(), Some("p1".into()), 1, "a".into()));
        assert_eq!(hget(c, &format!("{p}gactive"), "a").as_deref(), Some("5"));
        assert!(
            ring(c, p).is_empty(),
            "the lane was served whole and leaves the ring"
        );
    });
}

#[test]
fn a_claim_leases_the_head_with_its_attempts_as_the_token() {
    both(|c, emq, p| {
        fill(c, p, "a", 2);
        let now = support::fixtures::now_ms(c);
        let reply = emq(c, "claim", &[p, "60000"]).unwrap();
        assert_eq!(
            reply,
            Value::Array(vec![
                Value::Bulk(b"JOB-a-00001".to_vec()),
                Value::Bulk(b"p1".to_vec()),
                Value::Int(1),
                Value::Bulk(b"a".to_vec()),
            ]),
            "CLAIM replies one job's four fields flat"
        );
        assert_eq!(row(c, p, "JOB-a-00001", "state").as_deref(), Some("active"));
        assert_eq!(row(c, p, "JOB-a-00001", "attempts").as_deref(), Some("1"));
        let deadline = zscore(c, &format!("{p}active"), "JOB-a-00001").unwrap();
        assert!(
            (deadline - now - 60_000).abs() < 2_000,
            "deadline now + lease: {deadline} vs {now}"
        );
        assert_eq!(ring(c, p), ["a"], "a lane with work left stays");
    });
}

#[test]
fn claims_rotate_over_the_lanes_in_ring_order() {
    both(|c, emq, p| {
        for lane in ["a", "b", "c"] {
            fill(c, p, lane, 2);
        }
        let mut lanes = Vec::new();
        for _ in 0..6 {
            lanes.push(served(&emq(c, "claim", &[p, "60000"]).unwrap())[0].3.clone());
        }
        assert_eq!(lanes, ["a", "b", "c", "a", "b", "c"]);
        assert!(ring(c, p).is_empty());
        assert_eq!(
            emq(c, "claim", &[p, "60000"]).unwrap(),
            Value::Array(vec![]),
            "an empty ring serves []"
        );
    });
}

#[test]
fn wclaim_and_bclaim_reply_nested_arrays_in_pop_order() {
    both(|c, emq, p| {
        fill(c, p, "a", 5);
        emq(c, "weight", &[p, "a", "2"]).unwrap();
        let w = served(&emq(c, "wclaim", &[p, "60000"]).unwrap());
        assert_eq!(
            w.iter().map(|j| j.0.as_str()).collect::<Vec<_>>(),
            ["JOB-a-00001", "JOB-a-00002"]
        );
        let b = served(&emq(c, "bclaim", &[p, "60000"]).unwrap());
        assert_eq!(b.len(), 3, "the batch takes the rest of the lane");
        let one = emq(c, "wclaim", &[p, "60000"]).unwrap();
        assert_eq!(one, Value::Array(vec![]));
    });
}

#[test]
fn a_lane_without_headroom_leaves_the_ring_and_serves_nothing() {
    both(|c, emq, p| {
        fill(c, p, "a", 3);
        fill(c, p, "b", 1);
        emq(c, "weight", &[p, "a", "3"]).unwrap();
        emq(c, "limit", &[p, "a", "1"]).unwrap();
        let first = served(&emq(c, "wclaim", &[p, "60000"]).unwrap());
        assert_eq!(first.len(), 1, "the ceiling bends the weight");
        assert_eq!(ring(c, p), ["b"], "at its ceiling the lane left the ring");
        hset(c, &format!("{p}gactive"), "b", "0");
        c.ok(&["RPUSH", &format!("{p}ring"), "a"]);
        let none = emq(c, "wclaim", &[p, "60000"]).unwrap();
        assert_eq!(served(&none)[0].3, "b");
        assert_eq!(
            emq(c, "wclaim", &[p, "60000"]).unwrap(),
            Value::Array(vec![]),
            "a lane at its ceiling serves []"
        );
        assert!(ring(c, p).is_empty(), "and leaves the ring");
    });
}

#[test]
fn a_paused_queue_serves_nothing_and_writes_nothing() {
    both(|c, emq, p| {
        fill(c, p, "a", 2);
        emq(c, "qpause", &[p]).unwrap();
        let before = support::snapshot::snapshot(c, p);
        for claim in ["claim", "wclaim", "bclaim"] {
            assert_eq!(
                emq(c, claim, &[p, "60000"]).unwrap(),
                Value::Array(vec![]),
                "{claim}"
            );
        }
        assert_eq!(support::snapshot::snapshot(c, p), before);
        emq(c, "qresume", &[p]).unwrap();
        assert_eq!(served(&emq(c, "claim", &[p, "60000"]).unwrap()).len(), 1);
    });
}

#[test]
fn every_ring_push_is_followed_by_a_wake() {
    both(|c, emq, p| {
        fill(c, p, "a", 1);
        fill(c, p, "b", 1);
        let wake = c.ok(&["LRANGE", &format!("{p}wake"), "0", "-1"]).texts();
        assert_eq!(wake, ["1", "1"], "one wake per lane rung");
        for i in 0..70 {
            fill(c, p, &format!("x{i}"), 1);
        }
        assert_eq!(c.int(&["LLEN", &format!("{p}wake")]), 64, "trimmed to 64");
        let _ = emq;
    });
}

#[test]
fn a_payload_missing_from_its_row_is_nil() {
    both(|c, emq, p| {
        fill(c, p, "a", 1);
        c.ok(&["HDEL", &format!("{p}job:JOB-a-00001"), "payload"]);
        let j = served(&emq(c, "claim", &[p, "1000"]).unwrap());
        assert_eq!(j[0].1, None);
    });
}
