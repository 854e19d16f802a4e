//! A job's edits as commands (SPEC section 9): SETDATA, PROGRESS (its JSON
//! published on `P events`, the script's fields), LOG with KEEP
//! beside its twin, REMOVE (a flow's lock, the dedup key, a lane job taken
//! out of its lane and its lease: named differences), REPROCESS (a dead lane
//! job back in its lane: a named difference) and QDRAIN.

mod support;

use std::time::Duration;

use support::fixtures::{hget, served};
use support::twins::Twins;
use support::{Conn, Server, Value};

const P: &str = "e{q}:";

#[test]
fn setdata_and_progress_edit_the_row_and_progress_is_published() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["EMQ.QENQUEUE", P, "JOB-1", "old"]);
    let mut sub = s.conn();
    sub.ok(&["SUBSCRIBE", &format!("{P}events")]);
    sub.set_timeout(Some(Duration::from_secs(5)));
    assert_eq!(c.int(&["EMQ.SETDATA", P, "JOB-1", "new"]), 1);
    assert_eq!(c.int(&["EMQ.PROGRESS", P, "JOB-1", "42/100"]), 1);
    assert_eq!(c.int(&["EMQ.SETDATA", P, "JOB-9", "x"]), -1);
    assert_eq!(c.int(&["EMQ.PROGRESS", P, "JOB-9", "1"]), -1);
    let row = format!("{P}job:JOB-1");
    assert_eq!(hget(&mut c, &row, "payload").as_deref(), Some("new"));
    assert_eq!(hget(&mut c, &row, "progress").as_deref(), Some("42/100"));
    let msg = sub.read().unwrap().unwrap().texts();
    assert_eq!(msg[0], "message");
    assert_eq!(
        msg[2],
        r#"{"event":"progress","job":"JOB-1","progress":"42\/100"}"#
    );
    // The script's message carries the same fields (cjson's own order).
    let twins = Twins::load(&mut c);
    twins
        .like_native(&mut c, "progress", &[P.as_bytes(), b"JOB-1", b"43/100"])
        .unwrap();
    let theirs = sub.read().unwrap().unwrap().texts()[2].clone();
    for field in [
        r#""event":"progress""#,
        r#""job":"JOB-1""#,
        r#""progress":"43\/100""#,
    ] {
        assert!(theirs.contains(field), "{theirs}");
    }
    c.ok(&["SET", &format!("{P}job:JOB-s"), "a string"]);
    assert!(c
        .cmd(&["EMQ.SETDATA", P, "JOB-s", "x"])
        .unwrap_err()
        .starts_with("WRONGTYPE"));
}

#[test]
fn log_keeps_the_last_lines_as_the_script_does() {
    let s = Server::start();
    let mut c = s.conn();
    let twins = Twins::load(&mut c);
    let (n, l) = ("n{q}:", "l{q}:");
    for p in [n, l] {
        c.ok(&["EMQ.QENQUEUE", p, "JOB-1", "x"]);
    }
    for (i, keep) in [None, None, Some("2"), None, Some("1"), Some("5")]
        .into_iter()
        .enumerate()
    {
        let line = format!("line {i}");
        let mut args = vec!["JOB-1", line.as_str()];
        args.extend(keep.map(|k| ["KEEP", k]).into_iter().flatten());
        let mut native = vec!["EMQ.LOG", n];
        native.extend(&args);
        let mine = c.cmd(&native);
        let mut theirs: Vec<&[u8]> = vec![l.as_bytes()];
        theirs.extend(args.iter().map(|a| a.as_bytes()));
        assert_eq!(mine, twins.like_native(&mut c, "log", &theirs), "{args:?}");
        let lines = |c: &mut Conn, p: &str| {
            c.ok(&["LRANGE", &format!("{p}job:JOB-1:logs"), "0", "-1"])
                .texts()
        };
        assert_eq!(lines(&mut c, n), lines(&mut c, l), "{args:?}");
    }
    let kept = c
        .ok(&["LRANGE", &format!("{n}job:JOB-1:logs"), "0", "-1"])
        .texts();
    assert_eq!(kept, ["line 4", "line 5"]);
    assert_eq!(c.int(&["EMQ.LOG", n, "JOB-9", "x"]), -1);
    assert!(c
        .cmd(&["EMQ.LOG", n, "JOB-1", "x", "KEEP", "0"])
        .unwrap_err()
        .contains("KEEP"));
}

#[test]
fn remove_honours_a_flows_lock_and_the_dedup_key_and_leaves_no_lane_behind() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["EMQ.QENQUEUE", P, "JOB-1", "a", "JOB-2", "b"]);
    c.ok(&["SET", &format!("{P}job:JOB-1:lock"), "1"]);
    assert_eq!(
        c.cmd(&["EMQ.REMOVE", P, "JOB-1"]).unwrap_err(),
        "EMQLOCK job is locked"
    );
    c.ok(&["HSET", &format!("{P}job:JOB-2"), "lock", "flow"]);
    assert_eq!(
        c.cmd(&["EMQ.REMOVE", P, "JOB-2"]).unwrap_err(),
        "EMQLOCK job is locked"
    );
    c.ok(&["DEL", &format!("{P}job:JOB-1:lock")]);
    let (dedup, other) = (format!("{P}de:d1"), format!("{P}de:d2"));
    c.ok(&["SET", &dedup, "JOB-1"]);
    c.ok(&["SET", &other, "JOB-7"]);
    c.ok(&["EMQ.LOG", P, "JOB-1", "a line"]);
    assert_eq!(c.int(&["EMQ.REMOVE", P, "JOB-1", "DEDUP", "d1"]), 1);
    assert_eq!(
        c.int(&[
            "EXISTS",
            &format!("{P}job:JOB-1"),
            &format!("{P}job:JOB-1:logs"),
            &dedup
        ]),
        0
    );
    assert_eq!(c.ok(&["ZSCORE", &format!("{P}pending"), "JOB-1"]), Value::Nil);
    assert_eq!(c.int(&["EMQ.REMOVE", P, "JOB-1"]), -1);
    // A dedup key naming another job stays.
    c.ok(&["EMQ.QENQUEUE", P, "JOB-3", "c"]);
    assert_eq!(c.int(&["EMQ.REMOVE", P, "JOB-3", "DEDUP", "d2"]), 1);
    assert_eq!(c.int(&["EXISTS", &other]), 1);
    // A lane job leaves its lane (out of the ring when it empties), and a
    // leased one its lease (its lane's count lowered).
    c.ok(&["EMQ.ENQUEUE", P, "a", "JOB-a1", "x", "JOB-a2", "y"]);
    c.ok(&["EMQ.LIMIT", P, "a", "1"]);
    let leased = served(&c.ok(&["EMQ.CLAIM", P, "60000"]));
    assert_eq!(leased[0].0, "JOB-a1");
    assert_eq!(c.int(&["EMQ.REMOVE", P, "JOB-a1"]), 1);
    assert_eq!(hget(&mut c, &format!("{P}gactive"), "a"), None, "its lease left");
    assert_eq!(
        c.ok(&["LRANGE", &format!("{P}ring"), "0", "-1"]).texts(),
        ["a"],
        "rung again"
    );
    assert_eq!(c.int(&["EMQ.REMOVE", P, "JOB-a2"]), 1);
    assert_eq!(
        c.int(&["EXISTS", &format!("{P}g:a:pending"), &format!("{P}ring")]),
        0
    );
}

#[test]
fn reprocess_brings_a_dead_job_back_where_it_belongs() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["EMQ.ENQUEUE", P, "a", "JOB-a1", "x"]);
    c.ok(&["EMQ.CLAIM", P, "60000"]);
    assert_eq!(
        c.ok(&["EMQ.RETRY", P, "JOB-a1", "1", "0", "1", "boom"]),
        Value::Bulk(b"dead".to_vec())
    );
    c.ok(&["HSET", &format!("{P}job:JOB-a1"), "stalled", "2"]);
    assert_eq!(c.cmd(&["EMQ.REPROCESS", P, "JOB-none"]), Ok(Value::Int(-1)));
    assert_eq!(c.int(&["EMQ.REPROCESS", P, "JOB-a1"]), 1);
    let row = format!("{P}job:JOB-a1");
    assert_eq!(hget(&mut c, &row, "state").as_deref(), Some("pending"));
    assert_eq!(hget(&mut c, &row, "last_error"), None);
    assert_eq!(
        hget(&mut c, &row, "stalled").as_deref(),
        Some("2"),
        "as the script: stalls kept"
    );
    assert_eq!(hget(&mut c, &row, "attempts").as_deref(), Some("1"));
    assert_eq!(
        c.int(&["ZCARD", &format!("{P}g:a:pending")]),
        1,
        "back in its lane"
    );
    assert_eq!(c.ok(&["LRANGE", &format!("{P}ring"), "0", "-1"]).texts(), ["a"]);
    assert_eq!(
        c.cmd(&["EMQ.REPROCESS", P, "JOB-a1"]).unwrap_err(),
        "EMQSTATE not dead"
    );
}

#[test]
fn qdrain_empties_the_flat_queue_and_with_schedule_the_schedule() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["EMQ.QENQUEUE", P, "JOB-1", "a", "JOB-2", "b"]);
    c.ok(&["EMQ.LOG", P, "JOB-1", "a line"]);
    c.ok(&["EMQ.QSCHEDULE", P, "JOB-3", "c", "IN", "600000"]);
    c.ok(&["EMQ.ENQUEUE", P, "a", "JOB-a1", "x"]);
    assert_eq!(c.int(&["EMQ.QDRAIN", P]), 2);
    assert_eq!(
        c.int(&[
            "EXISTS",
            &format!("{P}pending"),
            &format!("{P}job:JOB-1"),
            &format!("{P}job:JOB-1:logs")
        ]),
        0
    );
    assert_eq!(
        c.int(&["EXISTS", &format!("{P}job:JOB-3"), &format!("{P}job:JOB-a1")]),
        2
    );
    assert_eq!(c.int(&["EMQ.QDRAIN", P, "SCHEDULE"]), 1);
    assert_eq!(
        c.int(&["EXISTS", &format!("{P}schedule"), &format!("{P}job:JOB-3")]),
        0
    );
    assert_eq!(
        c.int(&["EXISTS", &format!("{P}job:JOB-a1")]),
        1,
        "a lane's job stays"
    );
    assert!(c.cmd(&["EMQ.QDRAIN", P, "NOW"]).unwrap_err().contains("syntax"));
}

#[test]
fn a_replica_publishes_the_progress_its_primary_sent() {
    let primary = Server::start_with(&["--repl-diskless-sync-delay", "0"]);
    let replica = Server::start_plain(&[]);
    let mut r = support::replication::replicate_into(&replica, &primary);
    let mut c = primary.conn();
    c.ok(&["EMQ.QENQUEUE", P, "JOB-1", "x"]);
    support::replication::in_sync(&mut c, &mut r);
    let mut sub = replica.conn();
    sub.ok(&["SUBSCRIBE", &format!("{P}events")]);
    sub.set_timeout(Some(Duration::from_secs(5)));
    c.ok(&["EMQ.PROGRESS", P, "JOB-1", "7"]);
    let msg = sub.read().unwrap().unwrap().texts();
    assert_eq!(msg[2], r#"{"event":"progress","job":"JOB-1","progress":"7"}"#);
}

#[test]
fn progress_needs_the_channel_and_the_edits_that_add_data_need_memory() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["EMQ.QENQUEUE", P, "JOB-1", "x"]);
    c.ok(&["ACL", "SETUSER", "v", "on", ">pw", "+@all", "~*", "resetchannels"]);
    let mut v = s.conn();
    v.ok(&["AUTH", "v", "pw"]);
    let before = c.ok(&["DEBUG", "DIGEST"]).text();
    let e = v.cmd(&["EMQ.PROGRESS", P, "JOB-1", "5"]).unwrap_err();
    assert_eq!(
        e,
        format!("NOPERM this user has no permissions to access the '{P}events' channel")
    );
    assert_eq!(c.ok(&["DEBUG", "DIGEST"]).text(), before, "nothing written");
    c.ok(&["ACL", "SETUSER", "v", &format!("&{P}events")]);
    assert_eq!(v.int(&["EMQ.PROGRESS", P, "JOB-1", "5"]), 1);
    c.ok(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    c.ok(&["CONFIG", "SET", "maxmemory", "1"]);
    for cmd in [
        vec!["EMQ.LOG", P, "JOB-1", "a line"],
        vec!["EMQ.SETDATA", P, "JOB-1", "y"],
        vec!["EMQ.PROGRESS", P, "JOB-1", "6"],
    ] {
        assert!(c.cmd(&cmd).unwrap_err().starts_with("OOM"), "{cmd:?}");
    }
    assert_eq!(
        c.int(&["EMQ.REMOVE", P, "JOB-1"]),
        1,
        "removing frees memory: allowed"
    );
    c.ok(&["CONFIG", "SET", "maxmemory", "0"]);
}
