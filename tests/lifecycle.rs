//! The whole lane lifecycle on a real server, for the native commands and
//! their Lua twins alike: enqueue → claim → ack / nack / extend / reap, the
//! lease tokens, the weighted share, ceilings, pauses and reassigns.

mod common;

use common::*;
use std::collections::BTreeMap;

fn int(r: Reply) -> i64 {
    match r.value() {
        Value::Int(i) => *i,
        other => panic!("expected an integer, got {other:?}"),
    }
}

fn zscore(c: &mut redis::Connection, key: &str, member: &str) -> Option<f64> {
    redis::cmd("ZSCORE").arg(key).arg(member).query(c).unwrap()
}

/// Enqueues `n` jobs `<lane>-<i>` with mints `i`.
fn fill(c: &mut redis::Connection, emq: &Emq, p: &str, lane: &str, n: usize) {
    let pairs: Vec<String> = (0..n)
        .flat_map(|i| [i.to_string(), format!("{lane}-{i}")])
        .collect();
    let mut args = vec![p, lane];
    args.extend(pairs.iter().map(String::as_str));
    assert_eq!(int(emq.run(c, "enqueue", &args)), n as i64, "{:?}", emq.flavor);
}

fn lane_view(c: &mut redis::Connection, emq: &Emq, p: &str, lane: &str) -> BTreeMap<String, String> {
    let Value::Array(items) = emq.run(c, "lane", &[p, lane]).value().clone() else {
        panic!("LANE replies a flat array in RESP2");
    };
    items
        .chunks(2)
        .map(|kv| {
            let v = match &kv[1] {
                Value::Nil => "nil".to_string(),
                other => text(other),
            };
            (text(&kv[0]), v)
        })
        .collect()
}

#[test]
fn a_full_cycle_enqueue_claim_ack_reap() {
    both(|c, emq, p| {
        assert_eq!(
            int(emq.run(c, "enqueue", &[p, "acme", "1", "j1", "2", "j2", "3", "j3"])),
            3
        );
        assert_eq!(
            ring(c, p),
            ["acme"],
            "enqueue rings a lane that became serviceable"
        );
        emq.run(c, "weight", &[p, "acme", "2"]);
        let (lane, token, jobs) = emq.run(c, "wclaim", &[p, "60000"]).claim().unwrap();
        assert_eq!(
            (lane.as_str(), jobs.as_slice()),
            ("acme", &["j1".to_string(), "j2".to_string()][..])
        );
        let t = token.to_string();
        assert_eq!(
            int(emq.run(c, "ack", &[p, &t, "j1", "j2", "j1", "nope"])),
            2,
            "{:?}",
            emq.flavor
        );
        let view = lane_view(c, emq, p, "acme");
        assert_eq!(view["depth"], "1");
        assert_eq!(view["active"], "0");
        let (_, _, jobs) = emq.run(c, "claim", &[p, "1"]).claim().unwrap();
        assert_eq!(jobs, ["j3"]);
        std::thread::sleep(std::time::Duration::from_millis(5));
        let reaped = emq.run(c, "reap", &[p]);
        assert_eq!(
            reaped,
            Reply::Ok(Value::Array(vec![Value::BulkString(b"j3".to_vec())]))
        );
        assert_eq!(
            zscore(c, &format!("{p}g:acme:pending"), "j3"),
            Some(3.0),
            "back at its mint"
        );
        assert_eq!(ring(c, p), ["acme"]);
        let keys: Vec<String> = snapshot(c, p)
            .keys()
            .map(|k| String::from_utf8_lossy(k).into_owned())
            .collect();
        assert_eq!(
            keys,
            ["g:acme:pending", "gring", "gweight", "jreturns"],
            "no empty or stale key remains"
        );
        let returns = hget(c, &format!("{p}jreturns"), "j3");
        assert_eq!(
            returns.as_deref(),
            Some("1"),
            "the reaped lease counts as a return"
        );
    });
}

#[test]
fn a_stale_worker_cannot_touch_a_reclaimed_job() {
    both(|c, emq, p| {
        emq.run(c, "enqueue", &[p, "a", "1", "job"]);
        let (_, old, _) = emq.run(c, "claim", &[p, "1"]).claim().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
        assert_eq!(
            emq.run(c, "reap", &[p]).value(),
            &Value::Array(vec![Value::BulkString(b"job".to_vec())])
        );
        let (_, new, jobs) = emq.run(c, "claim", &[p, "60000"]).claim().unwrap();
        assert_eq!(jobs, ["job"]);
        assert!(new > old);
        let (old_s, new_s) = (old.to_string(), new.to_string());
        assert_eq!(
            int(emq.run(c, "ack", &[p, &old_s, "job"])),
            0,
            "{:?}: stale ACK",
            emq.flavor
        );
        assert_eq!(int(emq.run(c, "nack", &[p, &old_s, "job"])), 0, "stale NACK");
        let ext = emq.run(c, "extend", &[p, &old_s, "90000", "job"]);
        assert_eq!(
            ext.value(),
            &Value::Array(vec![Value::Int(ext_deadline(&ext)), Value::Int(0)]),
            "stale EXTEND"
        );
        assert_eq!(
            zscore(c, &format!("{p}leases"), "job"),
            Some(new as f64),
            "the live lease is untouched"
        );

        let ext = emq.run(c, "extend", &[p, &new_s, "120000", "job"]);
        let newer = ext_deadline(&ext);
        assert!(newer > new, "extended");
        assert_eq!(ext.value(), &Value::Array(vec![Value::Int(newer), Value::Int(1)]));
        assert_eq!(
            int(emq.run(c, "ack", &[p, &new_s, "job"])),
            0,
            "the token before EXTEND is spent"
        );
        assert_eq!(int(emq.run(c, "ack", &[p, &newer.to_string(), "job"])), 1);
        assert!(snapshot(c, p).is_empty(), "{:?}", snapshot(c, p));
    });
}

fn ext_deadline(r: &Reply) -> i64 {
    match r.value() {
        Value::Array(v) => match v[0] {
            Value::Int(d) => d,
            _ => panic!("{r:?}"),
        },
        _ => panic!("{r:?}"),
    }
}

#[test]
fn extend_never_moves_a_deadline_earlier() {
    both(|c, emq, p| {
        emq.run(c, "enqueue", &[p, "a", "1", "j"]);
        let (_, token, _) = emq.run(c, "claim", &[p, "600000"]).claim().unwrap();
        let ext = emq.run(c, "extend", &[p, &token.to_string(), "1", "j"]);
        assert_eq!(ext.value(), &Value::Array(vec![Value::Int(token), Value::Int(1)]));
    });
}

#[test]
fn weights_1_2_3_5_over_100_full_turns_serve_100_200_300_500() {
    both(|c, emq, p| {
        for (lane, w) in [("w1", "1"), ("w2", "2"), ("w3", "3"), ("w5", "5")] {
            fill(c, emq, p, lane, 600);
            emq.run(c, "weight", &[p, lane, w]);
        }
        let mut served = BTreeMap::<String, usize>::new();
        for _ in 0..(100 * 4) {
            let (lane, _, jobs) = emq.run(c, "wclaim", &[p, "60000"]).claim().unwrap();
            *served.entry(lane).or_default() += jobs.len();
        }
        let got: Vec<(&str, usize)> = served.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(
            got,
            [("w1", 100), ("w2", 200), ("w3", 300), ("w5", 500)],
            "{:?}",
            emq.flavor
        );
    });
}

#[test]
fn a_ceiling_bends_the_share_and_an_ack_brings_the_lane_back() {
    both(|c, emq, p| {
        fill(c, emq, p, "big", 10);
        fill(c, emq, p, "small", 10);
        emq.run(c, "weight", &[p, "big", "5"]);
        emq.run(c, "limit", &[p, "big", "2"]);
        let (lane, token, jobs) = emq.run(c, "wclaim", &[p, "60000"]).claim().unwrap();
        assert_eq!(
            (lane.as_str(), jobs.len()),
            ("big", 2),
            "{:?}: the ceiling bends weight 5",
            emq.flavor
        );
        assert_eq!(ring(c, p), ["small"], "at its ceiling, out of the ring");
        assert_eq!(emq.run(c, "wclaim", &[p, "60000"]).claim().unwrap().0, "small");
        assert_eq!(int(emq.run(c, "ack", &[p, &token.to_string(), &jobs[0]])), 1);
        assert_eq!(
            ring(c, p),
            ["small", "big"],
            "an ACK freed headroom: back in the ring"
        );
        emq.run(c, "wclaim", &[p, "60000"]);
        let (lane, _, jobs) = emq.run(c, "wclaim", &[p, "60000"]).claim().unwrap();
        assert_eq!((lane.as_str(), jobs.len()), ("big", 1), "headroom 1");
        emq.run(c, "limit", &[p, "big", "NONE"]);
        assert_eq!(ring(c, p), ["small", "big"], "no ceiling: serviceable again");
    });
}

#[test]
fn a_paused_lane_is_served_nothing_while_the_others_keep_their_turns() {
    both(|c, emq, p| {
        for lane in ["a", "b", "c"] {
            fill(c, emq, p, lane, 5);
        }
        assert_eq!(int(emq.run(c, "pause", &[p, "b"])), 1);
        assert_eq!(int(emq.run(c, "pause", &[p, "b"])), 0, "already paused");
        let lanes: Vec<String> = (0..4)
            .map(|_| emq.run(c, "claim", &[p, "60000"]).claim().unwrap().0)
            .collect();
        assert_eq!(lanes, ["a", "c", "a", "c"], "{:?}", emq.flavor);
        fill_more(c, emq, p, "b");
        assert!(
            !ring(c, p).contains(&"b".to_string()),
            "enqueue does not ring a paused lane"
        );
        assert_eq!(int(emq.run(c, "resume", &[p, "b"])), 1);
        assert_eq!(int(emq.run(c, "resume", &[p, "b"])), 0);
        assert_eq!(ring(c, p), ["a", "c", "b"]);
    });
}

fn fill_more(c: &mut redis::Connection, emq: &Emq, p: &str, lane: &str) {
    assert_eq!(int(emq.run(c, "enqueue", &[p, lane, "99", "late"])), 1);
}

#[test]
fn a_reassigned_job_keeps_its_place_in_mint_order() {
    both(|c, emq, p| {
        emq.run(c, "enqueue", &[p, "from", "5", "moved", "6", "stays"]);
        emq.run(c, "enqueue", &[p, "to", "1", "early", "10", "late"]);
        assert_eq!(int(emq.run(c, "reassign", &[p, "moved", "from", "to"])), 1);
        assert_eq!(
            int(emq.run(c, "reassign", &[p, "moved", "from", "to"])),
            0,
            "no longer in from"
        );
        assert_eq!(
            int(emq.run(c, "reassign", &[p, "early", "to", "to"])),
            0,
            "from == to"
        );
        assert_eq!(zscore(c, &format!("{p}g:to:pending"), "moved"), Some(5.0));
        emq.run(c, "weight", &[p, "to", "3"]);
        emq.run(c, "pause", &[p, "from"]);
        let (_, _, jobs) = emq.run(c, "wclaim", &[p, "60000"]).claim().unwrap();
        assert_eq!(jobs, ["early", "moved", "late"], "{:?}", emq.flavor);
        // Emptying a lane by reassigning takes it out of the ring; filling one rings it.
        emq.run(c, "resume", &[p, "from"]);
        assert_eq!(int(emq.run(c, "reassign", &[p, "stays", "from", "fresh"])), 1);
        assert_eq!(ring(c, p), ["fresh"]);
    });
}

#[test]
fn nack_puts_jobs_back_first_in_line() {
    both(|c, emq, p| {
        fill(c, emq, p, "a", 4);
        emq.run(c, "weight", &[p, "a", "2"]);
        let (_, token, jobs) = emq.run(c, "wclaim", &[p, "60000"]).claim().unwrap();
        assert_eq!(jobs, ["a-0", "a-1"]);
        assert_eq!(int(emq.run(c, "nack", &[p, &token.to_string(), "a-1", "a-0"])), 2);
        let (_, _, jobs) = emq.run(c, "wclaim", &[p, "60000"]).claim().unwrap();
        assert_eq!(jobs, ["a-0", "a-1"], "{:?}: served first again", emq.flavor);
    });
}

#[test]
fn enqueue_is_zadd_nx_and_skips_leased_jobs() {
    both(|c, emq, p| {
        assert_eq!(
            int(emq.run(c, "enqueue", &[p, "a", "1", "x", "2", "x", "3", "y"])),
            2
        );
        assert_eq!(
            zscore(c, &format!("{p}g:a:pending"), "x"),
            Some(1.0),
            "NX: the first mint stays"
        );
        let (_, _, jobs) = emq.run(c, "claim", &[p, "60000"]).claim().unwrap();
        assert_eq!(jobs, ["x"]);
        assert_eq!(int(emq.run(c, "enqueue", &[p, "b", "0", "x"])), 0, "x is leased");
        assert_eq!(int(emq.run(c, "enqueue", &[p, "a", "5", "y"])), 0, "y is pending");
        emq.run(c, "limit", &[p, "full", "1"]);
        emq.run(c, "enqueue", &[p, "full", "1", "f1"]);
        emq.run(c, "claim", &[p, "60000"]); // a: y
        emq.run(c, "claim", &[p, "60000"]); // full: f1, now at its ceiling
        assert_eq!(int(emq.run(c, "enqueue", &[p, "full", "2", "f2"])), 1);
        assert!(
            ring(c, p).is_empty(),
            "{:?}: a lane at its ceiling is not ringed",
            emq.flavor
        );
    });
}

#[test]
fn reap_takes_the_earliest_deadlines_first_up_to_count() {
    both(|c, emq, p| {
        fill(c, emq, p, "a", 3);
        // Claimed in one order, with leases that run out in the other (when
        // the claims come within 100 ms of each other: under valgrind they
        // may not, so the order expected is the deadlines' own).
        let mut leased = Vec::new();
        for lease in ["300", "200", "100"] {
            let (_, token, jobs) = emq.run(c, "claim", &[p, lease]).claim().unwrap();
            leased.extend(jobs.into_iter().map(|job| (token, job)));
        }
        leased.sort();
        let order: Vec<String> = leased.into_iter().map(|(_, job)| job).collect();
        // Every deadline is at most 300 ms after the last claim.
        std::thread::sleep(std::time::Duration::from_millis(320));
        let first = emq.run(c, "reap", &[p, "count", "2"]);
        let rest = emq.run(c, "reap", &[p, "COUNT", "100"]);
        let names = |r: &Reply| match r.value() {
            Value::Array(v) => v.iter().map(text).collect::<Vec<_>>(),
            other => panic!("{other:?}"),
        };
        assert_eq!(names(&first), order[..2], "{:?}", emq.flavor);
        assert_eq!(names(&rest), order[2..]);
        assert_eq!(names(&emq.run(c, "reap", &[p])), Vec::<String>::new());
    });
}

#[test]
fn the_lane_view() {
    both(|c, emq, p| {
        fill(c, emq, p, "a", 3);
        emq.run(c, "weight", &[p, "a", "4"]);
        emq.run(c, "claim", &[p, "60000"]);
        let v = lane_view(c, emq, p, "a");
        let expect: BTreeMap<String, String> = [
            ("depth", "2"),
            ("active", "1"),
            ("weight", "4"),
            ("limit", "nil"),
            ("paused", "0"),
            ("ringed", "1"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        assert_eq!(v, expect, "{:?}", emq.flavor);
        emq.run(c, "limit", &[p, "a", "1"]);
        let v = lane_view(c, emq, p, "a");
        assert_eq!((v["limit"].as_str(), v["ringed"].as_str()), ("1", "0"));
        let unknown = lane_view(c, emq, p, "nobody");
        assert_eq!(unknown["depth"], "0");
        assert_eq!(unknown["weight"], "1");
    });
}

#[test]
fn lane_is_a_map_in_resp3() {
    let server = Server::start();
    let client = redis::Client::open(format!("redis://127.0.0.1:{}/?protocol=resp3", server.port)).unwrap();
    let mut c = client.get_connection().unwrap();
    cmd(&mut c, &["EMQ.ENQUEUE", "q:", "a", "1", "j"]);
    match cmd(&mut c, &["EMQ.LANE", "q:", "a"]).value() {
        Value::Map(kv) => {
            assert_eq!(kv.len(), 6);
            assert_eq!(text(&kv[0].0), "depth");
            assert_eq!(kv[0].1, Value::Int(1));
            assert_eq!(kv[3].1, Value::Nil, "no limit");
        }
        other => panic!("expected a map, got {other:?}"),
    }
}
