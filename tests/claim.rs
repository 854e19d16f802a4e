//! EMQ.CLAIM / EMQ.WCLAIM / EMQ.WEIGHT on a real server: the seed's worked
//! examples and the keyspace a turn leaves, for the native commands and
//! their Lua twins alike.

mod common;

use common::*;

#[test]
fn weight_5_depth_3_headroom_4_serves_3() {
    both(|c, emq, p| {
        build(
            c,
            p,
            &[LaneSpec::new("a", 3).weight(5).limit(6).active(2)],
            &["a"],
        );
        let (lane, _, jobs) = emq.run(c, "wclaim", &[p, "30000"]).claim().expect("served");
        assert_eq!(lane, "a", "{:?}", emq.flavor);
        assert_eq!(jobs, ["a1", "a2", "a3"]);
        assert_eq!(hget(c, &format!("{p}gactive"), "a").as_deref(), Some("5"));
        assert!(ring(c, p).is_empty(), "the drained lane leaves the ring");
    });
}

#[test]
fn three_lanes_three_weights() {
    both(|c, emq, p| {
        let lanes = [
            LaneSpec::new("A", 10).weight(1),
            LaneSpec::new("B", 10).weight(3),
            LaneSpec::new("C", 2).weight(5),
        ];
        build(c, p, &lanes, &["A", "B", "C"]);
        let served: Vec<(String, usize)> = (0..3)
            .map(|_| {
                let (lane, _, jobs) = emq.run(c, "wclaim", &[p, "1000"]).claim().unwrap();
                (lane, jobs.len())
            })
            .collect();
        assert_eq!(
            served,
            [("A".to_string(), 1), ("B".to_string(), 3), ("C".to_string(), 2)],
            "{:?}",
            emq.flavor
        );
        assert_eq!(ring(c, p), ["A", "B"], "C drained and left; A and B rotated back");
    });
}

#[test]
fn a_lane_without_headroom_leaves_the_ring_and_serves_nothing() {
    both(|c, emq, p| {
        build(
            c,
            p,
            &[
                LaneSpec::new("full", 4).weight(2).limit(2).active(2),
                LaneSpec::new("ok", 1),
            ],
            &["full", "ok"],
        );
        let r = emq.run(c, "wclaim", &[p, "1000"]);
        assert_eq!(r.claim(), None, "{:?}", emq.flavor);
        assert_eq!(ring(c, p), ["ok"]);
        let depth: i64 = redis::cmd("ZCARD")
            .arg(format!("{p}g:full:pending"))
            .query(c)
            .unwrap();
        assert_eq!(depth, 4, "nothing served from the full lane");
        assert_eq!(hget(c, &format!("{p}gactive"), "full").as_deref(), Some("2"));
    });
}

#[test]
fn the_ceiling_bends_the_weight_and_the_guard_deals_the_lane_out() {
    both(|c, emq, p| {
        build(
            c,
            p,
            &[LaneSpec::new("a", 9).weight(5).limit(3).active(1)],
            &["a"],
        );
        let (_, _, jobs) = emq.run(c, "wclaim", &[p, "1000"]).claim().unwrap();
        assert_eq!(jobs.len(), 2, "headroom 2 clamps weight 5");
        assert!(ring(c, p).is_empty(), "at its ceiling: out of the ring");
        assert_eq!(hget(c, &format!("{p}gactive"), "a").as_deref(), Some("3"));
    });
}

#[test]
fn a_turn_leases_jobs_in_mint_order_under_one_deadline() {
    both(|c, emq, p| {
        let mut lane = LaneSpec::new("x", 0).weight(3);
        lane.jobs = vec![
            ("30".into(), "late".into()),
            ("1.5".into(), "first".into()),
            ("7".into(), "b".into()),
            ("7".into(), "a".into()),
        ];
        build(c, p, &[lane], &["x", "y"]);
        let t: Vec<i64> = redis::cmd("TIME")
            .query::<Vec<String>>(c)
            .unwrap()
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        let now = t[0] * 1000 + t[1] / 1000;
        let (lane, deadline, jobs) = emq.run(c, "wclaim", &[p, "60000"]).claim().unwrap();
        assert_eq!(lane, "x");
        assert_eq!(jobs, ["first", "a", "b"], "ZPOPMIN order: score, then member");
        assert!(
            (deadline - (now + 60000)).abs() < 1000,
            "deadline {deadline} vs now {now} + lease"
        );
        for job in &jobs {
            let score: f64 = redis::cmd("ZSCORE")
                .arg(format!("{p}leases"))
                .arg(job)
                .query(c)
                .unwrap();
            assert_eq!(score as i64, deadline, "one deadline per turn");
        }
        assert_eq!(hget(c, &format!("{p}jlease"), "first").as_deref(), Some("1.5 x"));
        assert_eq!(hget(c, &format!("{p}jlease"), "a").as_deref(), Some("7 x"));
        assert_eq!(ring(c, p), ["y", "x"], "rotated one step, still serviceable");
        let left: Vec<String> = redis::cmd("ZRANGE")
            .arg(format!("{p}g:x:pending"))
            .arg(0)
            .arg(-1)
            .query(c)
            .unwrap();
        assert_eq!(left, ["late"]);
    });
}

#[test]
fn claim_serves_one_head_whatever_the_weight() {
    both(|c, emq, p| {
        build(
            c,
            p,
            &[LaneSpec::new("a", 5).weight(4), LaneSpec::new("b", 5)],
            &["a", "b"],
        );
        for expect in ["a", "b", "a"] {
            let (lane, _, jobs) = emq.run(c, "claim", &[p, "1000"]).claim().unwrap();
            assert_eq!((lane.as_str(), jobs.len()), (expect, 1), "{:?}", emq.flavor);
        }
    });
}

#[test]
fn empty_ring_and_empty_lanes() {
    both(|c, emq, p| {
        assert_eq!(emq.run(c, "wclaim", &[p, "1000"]).claim(), None, "no ring at all");
        build(c, p, &[], &["ghost", "gone"]);
        assert_eq!(emq.run(c, "claim", &[p, "1000"]).claim(), None);
        assert_eq!(ring(c, p), ["gone"], "an empty lane leaves the ring");
        assert_eq!(emq.run(c, "claim", &[p, "1000"]).claim(), None);
        let exists: i64 = redis::cmd("EXISTS").arg(format!("{p}gring")).query(c).unwrap();
        assert_eq!(exists, 0, "the emptied ring is deleted");
    });
}

#[test]
fn rotating_a_one_lane_ring_keeps_its_ttl() {
    both(|c, emq, p| {
        build(c, p, &[LaneSpec::new("solo", 3)], &["solo"]);
        let ring_key = format!("{p}gring");
        let _: () = redis::cmd("EXPIRE").arg(&ring_key).arg(1000).query(c).unwrap();
        emq.run(c, "claim", &[p, "1000"]).claim().unwrap();
        let ttl: i64 = redis::cmd("TTL").arg(&ring_key).query(c).unwrap();
        assert!(ttl > 0, "{:?}: the ring lost its TTL ({ttl})", emq.flavor);
    });
}

#[test]
fn the_last_job_deletes_the_pending_key() {
    both(|c, emq, p| {
        build(c, p, &[LaneSpec::new("a", 2).weight(9)], &["a"]);
        emq.run(c, "wclaim", &[p, "1000"]).claim().unwrap();
        let snap = snapshot(c, p);
        let keys: Vec<String> = snap
            .keys()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect();
        assert_eq!(
            keys,
            ["gactive", "gweight", "jlease", "leases"],
            "{:?}",
            emq.flavor
        );
    });
}

#[test]
fn weight_is_one_hset_and_never_touches_the_ring() {
    both(|c, emq, p| {
        build(c, p, &[LaneSpec::new("a", 1)], &["a"]);
        assert_eq!(
            emq.run(c, "weight", &[p, "a", "7"]),
            Reply::Ok(Value::Okay),
            "{:?}",
            emq.flavor
        );
        assert_eq!(emq.run(c, "weight", &[p, "idle", "2"]), Reply::Ok(Value::Okay));
        assert_eq!(hget(c, &format!("{p}gweight"), "a").as_deref(), Some("7"));
        assert_eq!(hget(c, &format!("{p}gweight"), "idle").as_deref(), Some("2"));
        assert_eq!(ring(c, p), ["a"], "an idle lane is not ringed by a weight");
    });
}

#[test]
fn weights_are_a_share_over_full_turns() {
    both(|c, emq, p| {
        let lanes = [
            LaneSpec::new("w1", 400).weight(1),
            LaneSpec::new("w2", 400).weight(2),
            LaneSpec::new("w3", 400).weight(3),
            LaneSpec::new("w5", 400).weight(5),
        ];
        build(c, p, &lanes, &["w1", "w2", "w3", "w5"]);
        let mut served = std::collections::BTreeMap::<String, usize>::new();
        for _ in 0..(4 * 50) {
            let (lane, _, jobs) = emq.run(c, "wclaim", &[p, "1000"]).claim().unwrap();
            *served.entry(lane).or_default() += jobs.len();
        }
        let got: Vec<usize> = served.values().copied().collect();
        assert_eq!(got, [50, 100, 150, 250], "{:?}", emq.flavor);
    });
}

#[test]
fn module_list_and_info_tell_the_build() {
    let server = Server::start();
    let mut c = server.conn();
    let modules = cmd(&mut c, &["MODULE", "LIST"]);
    assert!(format!("{modules:?}").contains("emq"), "{modules:?}");
    let version = info_text(&mut c, "emq", "emq_version");
    assert_eq!(version.as_deref(), Some(env!("CARGO_PKG_VERSION")));
    let commit = info_text(&mut c, "emq", "emq_commit").expect("a commit line");
    assert!(commit.len() >= 7 && !commit.starts_with("unknown"), "{commit}");
}
