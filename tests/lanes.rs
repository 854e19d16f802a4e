//! Lane administration as EchoMQ's scripts do it (ENQUEUE, WEIGHT, PAUSE,
//! RESUME, LIMIT, REASSIGN, DRAIN), on the native commands.

mod support;

use support::fixtures::{fill, hget, ring, row, served};
use support::{Server, Value};

const P: &str = "emq:{q}:";

#[test]
fn enqueue_writes_the_row_and_skips_duplicates() {
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(
        c.int(&[
            "EMQ.ENQUEUE",
            P,
            "a",
            "JOB1",
            "one",
            "JOB2",
            "two",
            "JOB1",
            "again"
        ]),
        2
    );
    let fields = c.ok(&["HGETALL", &format!("{P}job:JOB1")]);
    for (f, v) in [
        ("state", "pending"),
        ("attempts", "0"),
        ("payload", "one"),
        ("group", "a"),
    ] {
        assert_eq!(fields.field(f).map(Value::text).as_deref(), Some(v), "{f}");
    }
    assert_eq!(
        c.ok(&["ZRANGE", &format!("{P}g:a:pending"), "0", "-1", "WITHSCORES"])
            .texts(),
        ["JOB1", "0", "JOB2", "0"]
    );
    assert_eq!(ring(&mut c, P), ["a"]);
    assert_eq!(
        c.int(&["EMQ.ENQUEUE", P, "b", "JOB1", "x"]),
        0,
        "a job whose row exists is a duplicate"
    );
    assert_eq!(row(&mut c, P, "JOB1", "group").as_deref(), Some("a"));
    assert_eq!(
        c.ok(&["LRANGE", &format!("{P}wake"), "0", "-1"]).texts(),
        ["1"],
        "one wake: one ring push"
    );
    // A long batch (its repeats found by a hash): the first payload counts.
    let mut args: Vec<String> = vec!["EMQ.ENQUEUE".into(), P.into(), "c".into()];
    for i in 0..40 {
        args.extend([format!("JOBc{i}"), format!("p{i}")]);
    }
    args.extend(["JOBc0".into(), "again".into(), "JOB2".into(), "x".into()]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(c.int(&refs), 40);
    assert_eq!(row(&mut c, P, "JOBc0", "payload").as_deref(), Some("p0"));
}

#[test]
fn the_kind_rule_refuses_the_whole_call_and_follows_its_config() {
    let s = Server::start();
    let mut c = s.conn();
    let e = c
        .cmd(&["EMQ.ENQUEUE", P, "a", "JOB1", "x", "task-2", "y"])
        .unwrap_err();
    assert_eq!(e, "EMQKIND job id must be JOB-namespaced");
    assert_eq!(c.int(&["DBSIZE"]), 0, "nothing written");
    c.ok(&["CONFIG", "SET", "emq.job-kind", "TSK"]);
    assert_eq!(
        c.cmd(&["EMQ.ENQUEUE", P, "a", "JOB1", "x"]).unwrap_err(),
        "EMQKIND job id must be TSK-namespaced"
    );
    assert_eq!(c.int(&["EMQ.ENQUEUE", P, "a", "TSK1", "x"]), 1);
    c.ok(&["CONFIG", "SET", "emq.job-kind", ""]);
    assert_eq!(
        c.int(&["EMQ.ENQUEUE", P, "a", "anything", "x"]),
        1,
        "an empty kind admits any id"
    );
    assert_eq!(
        c.ok(&["CONFIG", "GET", "emq.job-kind"]).texts(),
        ["emq.job-kind", ""]
    );
}

#[test]
fn weight_is_one_hset_and_leaves_the_ring_alone() {
    let s = Server::start();
    let mut c = s.conn();
    fill(&mut c, P, "a", 1);
    let before = ring(&mut c, P);
    assert_eq!(c.int(&["EMQ.WEIGHT", P, "a", "3"]), 1);
    assert_eq!(hget(&mut c, &format!("{P}gweight"), "a").as_deref(), Some("3"));
    assert_eq!(ring(&mut c, P), before);
    assert_eq!(
        c.int(&["EMQ.WEIGHT", P, "idle", "2"]),
        1,
        "a lane with no jobs takes a weight too"
    );
    assert!(ring(&mut c, P).iter().all(|l| l != "idle"));
}

#[test]
fn pause_and_resume_take_a_lane_out_and_back_with_a_wake() {
    let s = Server::start();
    let mut c = s.conn();
    fill(&mut c, P, "a", 2);
    fill(&mut c, P, "b", 2);
    assert_eq!(c.int(&["EMQ.PAUSE", P, "a"]), 1);
    assert_eq!(ring(&mut c, P), ["b"]);
    assert_eq!(c.int(&["SISMEMBER", &format!("{P}paused"), "a"]), 1);
    for _ in 0..2 {
        assert_eq!(
            served(&c.ok(&["EMQ.CLAIM", P, "60000"]))[0].3,
            "b",
            "a paused lane is never served"
        );
    }
    let wakes = c.int(&["LLEN", &format!("{P}wake")]);
    assert_eq!(c.int(&["EMQ.RESUME", P, "a"]), 1);
    assert_eq!(ring(&mut c, P), ["a"]);
    assert_eq!(c.int(&["LLEN", &format!("{P}wake")]), wakes + 1);
    assert_eq!(
        c.int(&["EMQ.RESUME", P, "a"]),
        1,
        "resuming a lane not paused is a no-op reply 1"
    );
    assert_eq!(ring(&mut c, P), ["a"], "rung once");
    assert_eq!(c.int(&["EMQ.PAUSE", P, "a"]), 1);
    assert_eq!(c.int(&["EMQ.PAUSE", P, "a"]), 1, "twice: still 1");
}

#[test]
fn a_ceiling_parks_a_lane_and_raising_it_rings_it() {
    let s = Server::start();
    let mut c = s.conn();
    fill(&mut c, P, "a", 4);
    c.ok(&["EMQ.WCLAIM", P, "60000"]);
    c.ok(&["EMQ.WCLAIM", P, "60000"]);
    assert_eq!(c.int(&["EMQ.LIMIT", P, "a", "2"]), 1);
    assert!(ring(&mut c, P).is_empty(), "at its ceiling it leaves the ring");
    assert_eq!(c.int(&["EMQ.LIMIT", P, "a", "3"]), 1);
    assert_eq!(ring(&mut c, P), ["a"], "under it again, rung");
    assert_eq!(c.int(&["EMQ.LIMIT", P, "a", "1"]), 1);
    assert!(ring(&mut c, P).is_empty());
    assert_eq!(
        c.int(&["EMQ.LIMIT", P, "a", "NONE"]),
        1,
        "NONE removes the ceiling"
    );
    assert_eq!(hget(&mut c, &format!("{P}glimit"), "a"), None);
    assert_eq!(ring(&mut c, P), ["a"]);
}

#[test]
fn reassign_answers_as_greassign_does() {
    let s = Server::start();
    let mut c = s.conn();
    fill(&mut c, P, "a", 2);
    assert_eq!(c.int(&["EMQ.REASSIGN", P, "JOB-none", "b"]), -1, "no row");
    c.ok(&["HSET", &format!("{P}job:JOBflat"), "state", "pending"]);
    assert_eq!(
        c.int(&["EMQ.REASSIGN", P, "JOBflat", "b"]),
        -1,
        "a row without a lane"
    );
    assert_eq!(
        c.int(&["EMQ.REASSIGN", P, "JOB-a-00001", "a"]),
        0,
        "already there"
    );
    let claimed = served(&c.ok(&["EMQ.CLAIM", P, "60000"]))[0].0.clone();
    assert_eq!(
        c.int(&["EMQ.REASSIGN", P, &claimed, "b"]),
        -2,
        "leased, not pending"
    );
    assert_eq!(c.int(&["EMQ.REASSIGN", P, "JOB-a-00002", "b"]), 1);
    assert_eq!(row(&mut c, P, "JOB-a-00002", "group").as_deref(), Some("b"));
    assert_eq!(
        support::fixtures::zscore(&mut c, &format!("{P}g:b:pending"), "JOB-a-00002"),
        Some(0)
    );
    assert_eq!(ring(&mut c, P), ["b"], "b rung, a emptied and out of the ring");
}

#[test]
fn drain_deletes_a_lanes_pending_jobs_and_keeps_its_settings() {
    let s = Server::start();
    let mut c = s.conn();
    fill(&mut c, P, "a", 3);
    fill(&mut c, P, "b", 1);
    c.ok(&["EMQ.WEIGHT", P, "a", "2"]);
    c.ok(&["EMQ.LIMIT", P, "a", "5"]);
    let leased = served(&c.ok(&["EMQ.CLAIM", P, "60000"]))[0].0.clone();
    c.ok(&["RPUSH", &format!("{P}job:JOB-a-00002:logs"), "a line"]);
    assert_eq!(c.int(&["EMQ.DRAIN", P, "a"]), 2);
    for key in [
        "g:a:pending",
        "job:JOB-a-00002",
        "job:JOB-a-00002:logs",
        "job:JOB-a-00003",
    ] {
        assert_eq!(c.int(&["EXISTS", &format!("{P}{key}")]), 0, "{key}");
    }
    assert_eq!(
        row(&mut c, P, &leased, "state").as_deref(),
        Some("active"),
        "the lease stays"
    );
    assert_eq!(hget(&mut c, &format!("{P}gactive"), "a").as_deref(), Some("1"));
    assert_eq!(hget(&mut c, &format!("{P}gweight"), "a").as_deref(), Some("2"));
    assert_eq!(ring(&mut c, P), ["b"]);
    assert_eq!(c.int(&["EMQ.DRAIN", P, "nothing"]), 0);
}
