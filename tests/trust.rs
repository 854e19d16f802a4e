//! What must never happen to a queue a team relies on: the server aborting,
//! a job leased twice, one tenant's bad value stopping the others, a replica
//! that differs from its primary. Each test is one way it was made to happen
//! (issue 12), and shows it no longer does, on every server `make test` runs.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::*;

fn rpush(c: &mut redis::Connection, key: &str, value: &str) {
    let _: () = redis::cmd("RPUSH").arg(key).arg(value).query(c).unwrap();
}

fn blocked_clients(c: &mut redis::Connection) -> i64 {
    info_text(c, "emq", "emq_blocked_clients")
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}

/// Starts `EMQ.WCLAIM p 30000 BLOCK ms` on its own connection and waits
/// until the server counts it as waiting.
fn waiter(server: &Server, p: &'static str, ms: &'static str) -> thread::JoinHandle<Reply> {
    let handle = server.call_in_thread(&["EMQ.WCLAIM", p, "30000", "BLOCK", ms]);
    let mut c = server.conn();
    wait_for("the claim to wait", || blocked_clients(&mut c) == 1);
    handle
}

/// Issue 12, 1: a producer rings a lane that cannot be served while a claim
/// waits. The wake-up must not write and keep waiting (Redis 7.0 asserts on
/// that when the AOF is on or a replica is attached); the waiter is served
/// once a real lane arrives, and a replica ends where the primary does.
#[test]
fn a_lane_rung_under_a_waiting_claim_never_aborts_the_server() {
    for with_replica in [false, true] {
        let mut primary = Server::start_with(&["--appendonly", "yes"]);
        let replica = with_replica.then(|| Server::start_plain(&[]));
        let mut r = replica.as_ref().map(|r| replicate_into(r, &primary));
        let mut c = primary.conn();
        let p = "emq:{b}:";
        let waiting = waiter(&primary, p, "3000");
        rpush(&mut c, &format!("{p}gring"), "ghost");
        thread::sleep(Duration::from_millis(50));
        assert!(primary.alive(), "the server lives (replica: {with_replica})");
        assert_eq!(blocked_clients(&mut c), 1, "still waiting, nothing served");
        assert_eq!(ring(&mut c, p), ["ghost"], "the wake-up wrote nothing");
        cmd(&mut c, &["EMQ.ENQUEUE", p, "A", "1", "a1"]);
        let (lane, _, jobs) = waiting.join().unwrap().claim().expect("served");
        assert_eq!((lane.as_str(), jobs), ("A", vec!["a1".to_string()]));
        assert_eq!(ring(&mut c, p), Vec::<String>::new(), "ghost dropped on the way");
        assert!(primary.alive());
        if let Some(r) = r.as_mut() {
            in_sync(&mut c, r);
            assert_eq!(digest(&mut c), digest(r), "the replica follows");
        }
    }
}

/// Issue 12, 2: one job id enqueued in two lanes. The first turn leases it;
/// the second meets it as a duplicate, removes it and leases nothing; the
/// lease record and the active count stay right, and lane A serves again
/// after its ACK. Native and twin alike.
#[test]
fn a_job_enqueued_in_two_lanes_is_leased_once() {
    both(|c, emq, p| {
        emq.run(c, "limit", &[p, "A", "1"]);
        emq.run(c, "enqueue", &[p, "A", "1", "j"]);
        emq.run(c, "enqueue", &[p, "B", "2", "j"]);
        let (lane, token, jobs) = emq.run(c, "wclaim", &[p, "30000"]).claim().unwrap();
        assert_eq!((lane.as_str(), jobs.as_slice()), ("A", &["j".to_string()][..]));
        assert_eq!(
            emq.run(c, "wclaim", &[p, "30000"]).claim(),
            None,
            "B's copy is not leased"
        );
        let jlease: Vec<String> = redis::cmd("HVALS").arg(format!("{p}jlease")).query(c).unwrap();
        assert_eq!(jlease, ["1 A"]);
        let zcard: i64 = redis::cmd("ZCARD")
            .arg(format!("{p}g:B:pending"))
            .query(c)
            .unwrap();
        assert_eq!(zcard, 0, "the duplicate left B");
        let acked = emq.run(c, "ack", &[p, &token.to_string(), "j"]);
        assert_eq!(acked, Reply::Ok(Value::Int(1)));
        emq.run(c, "enqueue", &[p, "A", "3", "k"]);
        let (lane, _, jobs) = emq
            .run(c, "wclaim", &[p, "30000"])
            .claim()
            .expect("A serves again");
        assert_eq!((lane.as_str(), jobs), ("A", vec!["k".to_string()]));
    });
}

/// A duplicate behind fresh heads: K fresh jobs are leased, the duplicate
/// met among them is removed, the ones after the K-th stay.
#[test]
fn duplicates_among_the_heads_give_way_to_the_next_ones() {
    both(|c, emq, p| {
        emq.run(c, "enqueue", &[p, "X", "1", "x1"]);
        let (_, _, first) = emq.run(c, "wclaim", &[p, "30000"]).claim().unwrap();
        assert_eq!(first, ["x1"]);
        let _: () = redis::cmd("ZADD")
            .arg(format!("{p}g:A:pending"))
            .arg(&["1", "a1", "2", "x1", "3", "a2", "4", "a3"])
            .query(c)
            .unwrap();
        rpush(c, &format!("{p}gring"), "A");
        emq.run(c, "weight", &[p, "A", "2"]);
        let (_, _, jobs) = emq.run(c, "wclaim", &[p, "30000"]).claim().unwrap();
        assert_eq!(
            jobs,
            ["a1", "a2"],
            "x1 is leased already: skipped over and removed"
        );
        let left: Vec<String> = redis::cmd("ZRANGE")
            .arg(format!("{p}g:A:pending"))
            .arg(0)
            .arg(-1)
            .query(c)
            .unwrap();
        assert_eq!(left, ["a3"]);
        let active = hget(c, &format!("{p}gactive"), "A");
        assert_eq!(active.as_deref(), Some("2"));
    });
}

/// Issue 12, 3: a bad value in one lane's state. That lane is skipped
/// (rotated, logged, counted) and the others are served; each kind of
/// damage alike, native and twin.
#[test]
fn one_damaged_lane_never_stops_the_others() {
    type Damage = fn(&mut redis::Connection, &str);
    let damages: [(&str, Damage); 6] = [
        ("a weight of 2.5", |c, p| {
            hset(c, &format!("{p}gweight"), "A", "2.5")
        }),
        ("a weight of abc", |c, p| {
            hset(c, &format!("{p}gweight"), "A", "abc")
        }),
        ("a limit of x", |c, p| hset(c, &format!("{p}glimit"), "A", "x")),
        ("an active count of x", |c, p| {
            hset(c, &format!("{p}gactive"), "A", "x")
        }),
        ("a negative active count", |c, p| {
            hset(c, &format!("{p}glimit"), "A", "2");
            hset(c, &format!("{p}gactive"), "A", "-3");
        }),
        ("a pending key of the wrong type", |c, p| {
            let key = format!("{p}g:A:pending");
            let _: () = redis::cmd("DEL").arg(&key).query(c).unwrap();
            let _: () = redis::cmd("SET").arg(&key).arg("x").query(c).unwrap();
        }),
    ];
    for (what, damage) in damages {
        both(|c, emq, p| {
            emq.run(
                c,
                "enqueue",
                &[p, "A", "1", "a1", "2", "a2", "3", "a3", "4", "a4", "5", "a5"],
            );
            emq.run(c, "enqueue", &[p, "B", "1", "b1", "2", "b2"]);
            damage(c, p);
            let mut served = Vec::new();
            for _ in 0..6 {
                let reply = emq.run(c, "wclaim", &[p, "30000"]);
                assert!(reply.err().is_none(), "{what}: {reply:?}");
                if let Some((lane, _, jobs)) = reply.claim() {
                    served.push((lane, jobs.len()));
                }
            }
            assert_eq!(served, [("B".to_string(), 1), ("B".to_string(), 1)], "{what}");
            assert!(
                ring(c, p).contains(&"A".to_string()),
                "{what}: A stays, to be repaired"
            );
        });
    }
    let server = Server::start();
    let mut c = server.conn();
    cmd(&mut c, &["EMQ.ENQUEUE", "q:", "A", "1", "a1"]);
    hset(&mut c, "q:gweight", "A", "2.5");
    for _ in 0..50 {
        cmd(&mut c, &["EMQ.WCLAIM", "q:", "1000"]);
    }
    assert_eq!(
        info_text(&mut c, "emq", "emq_lanes_skipped").as_deref(),
        Some("50")
    );
    let log = server.log();
    let lines = log
        .matches("lane 'A' skipped: its weight is not an integer")
        .count();
    assert!(
        (1..=3).contains(&lines),
        "logged, at most once a second: {lines} lines"
    );
}

/// Issue 12, 4: a lane with an empty name is never served; a lease record
/// that is damaged is dropped (and reported) and never stops REAP or ACK.
#[test]
fn empty_lane_names_and_damaged_records_never_stall_a_queue() {
    both(|c, emq, p| {
        rpush(c, &format!("{p}gring"), "");
        let _: () = redis::cmd("ZADD")
            .arg(format!("{p}g::pending"))
            .arg(1)
            .arg("e1")
            .query(c)
            .unwrap();
        assert_eq!(emq.run(c, "wclaim", &[p, "30000"]).claim(), None);
        assert!(ring(c, p).is_empty(), "the nameless lane left the ring");
        let jlease: i64 = redis::cmd("HLEN").arg(format!("{p}jlease")).query(c).unwrap();
        assert_eq!(jlease, 0, "no record \"1 \" was written");

        emq.run(c, "enqueue", &[p, "A", "1", "a1", "2", "a2", "3", "a3"]);
        emq.run(c, "weight", &[p, "A", "3"]);
        let (_, token, jobs) = emq.run(c, "wclaim", &[p, "1"]).claim().unwrap();
        assert_eq!(jobs.len(), 3);
        hset(c, &format!("{p}jlease"), "a1", "garbage");
        hset(c, &format!("{p}jlease"), "a2", "1 ");
        thread::sleep(Duration::from_millis(5));
        let reaped = emq.run(c, "reap", &[p]);
        let Value::Array(ids) = reaped.value() else {
            panic!("{reaped:?}")
        };
        let mut ids: Vec<String> = ids.iter().map(text).collect();
        ids.sort();
        assert_eq!(
            ids,
            ["a1", "a2", "a3"],
            "the damaged ones dropped and listed, a3 returned"
        );
        let pending: Vec<String> = redis::cmd("ZRANGE")
            .arg(format!("{p}g:A:pending"))
            .arg(0)
            .arg(-1)
            .query(c)
            .unwrap();
        assert_eq!(pending, ["a3"]);
        let nameless: Option<f64> = redis::cmd("ZSCORE")
            .arg(format!("{p}g::pending"))
            .arg("a2")
            .query(c)
            .unwrap();
        assert_eq!(nameless, None, "no job went back to a lane with no name");
        let active = hget(c, &format!("{p}gactive"), "A");
        assert_eq!(
            active.as_deref(),
            Some("2"),
            "the dropped leases' lane is unknown: left for REPAIR"
        );
        let stale = emq.run(c, "ack", &[p, &token.to_string(), "a1"]);
        assert_eq!(stale, Reply::Ok(Value::Int(0)));
    });
}

/// Issue 12, 5: a record whose mint the server cannot store. NACK drops the
/// lease instead of writing a score the replica (and an AOF reload) would
/// refuse: primary, replica and the reloaded AOF hold the same keyspace.
#[test]
fn a_damaged_mint_never_splits_primary_and_replica() {
    let primary = Server::start_with(&["--appendonly", "yes"]);
    let replica = Server::start_plain(&[]);
    let mut r = replicate_into(&replica, &primary);
    let mut c = primary.conn();
    let p = "q{m}:";
    cmd(&mut c, &["EMQ.ENQUEUE", p, "A", "1", "a1", "2", "a2"]);
    cmd(&mut c, &["EMQ.WEIGHT", p, "A", "2"]);
    let (_, token, _) = cmd(&mut c, &["EMQ.WCLAIM", p, "60000"]).claim().unwrap();
    hset(&mut c, &format!("{p}jlease"), "a1", "1e999 A");
    let n = cmd(&mut c, &["EMQ.NACK", p, &token.to_string(), "a1", "a2"]);
    assert_eq!(n, Reply::Ok(Value::Int(1)), "a2 returned, a1 dropped");
    in_sync(&mut c, &mut r);
    let want = digest(&mut c);
    assert_eq!(digest(&mut r), want, "the replica holds what the primary holds");
    let score: Option<String> = redis::cmd("ZSCORE")
        .arg(format!("{p}g:A:pending"))
        .arg("a1")
        .query(&mut c)
        .unwrap();
    assert_eq!(
        score, None,
        "a1 was not restored at a score the primary alone could store"
    );
    drop(r);
    drop(replica);
    let primary = primary.restart(&["--appendonly", "yes"]);
    assert_eq!(
        digest(&mut primary.conn()),
        want,
        "the AOF reloads the same keyspace"
    );
}

/// Issue 12, 6: a producer rings a paused lane. The claim drops it.
#[test]
fn a_paused_lane_is_never_served() {
    both(|c, emq, p| {
        emq.run(c, "pause", &[p, "X"]);
        let _: () = redis::cmd("ZADD")
            .arg(format!("{p}g:X:pending"))
            .arg(1)
            .arg("x1")
            .query(c)
            .unwrap();
        rpush(c, &format!("{p}gring"), "X");
        assert_eq!(emq.run(c, "wclaim", &[p, "1000"]).claim(), None);
        assert!(ring(c, p).is_empty(), "X left the ring");
        emq.run(c, "resume", &[p, "X"]);
        let (lane, _, _) = emq
            .run(c, "claim", &[p, "1000"])
            .claim()
            .expect("served once resumed");
        assert_eq!(lane, "X");
    });
}

/// Issue 12, 7: a BLOCK timeout the server would refuse is refused first:
/// nothing read or changed, no waiter counted, no handle leaked, and the
/// module still unloads.
#[test]
fn a_block_timeout_the_server_refuses_is_refused_first() {
    let server = Server::start_with(&["--enable-module-command", "local"]);
    let mut c = server.conn();
    rpush(&mut c, "q:gring", "ghost");
    let used = |c: &mut redis::Connection| -> i64 {
        info_text(c, "memory", "used_memory").unwrap().parse().unwrap()
    };
    let before = used(&mut c);
    for _ in 0..2_000 {
        let r = cmd(
            &mut c,
            &["EMQ.WCLAIM", "q:", "1000", "BLOCK", "9223372036854775807"],
        );
        assert_eq!(r.err(), Some("ERR BLOCK timeout is out of range"));
    }
    assert_eq!(ring(&mut c, "q:"), ["ghost"], "nothing dropped");
    assert_eq!(blocked_clients(&mut c), 0, "no waiter counted");
    assert!(used(&mut c) - before < 1 << 20, "no handle leaked");
    // The largest timeout anyone means is accepted, and waits.
    let port = server.port;
    let long = thread::spawn(move || {
        let mut c = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .unwrap()
            .get_connection()
            .unwrap();
        cmd(
            &mut c,
            &["EMQ.CLAIM", "q:", "1000", "BLOCK", "4611686018427387904"],
        )
    });
    wait_for("the long wait", || blocked_clients(&mut c) == 1);
    let ids: String = redis::cmd("CLIENT").arg("LIST").query(&mut c).unwrap();
    let id = ids
        .lines()
        .find(|l| l.contains("cmd=emq.claim"))
        .and_then(|l| l.split(' ').find_map(|f| f.strip_prefix("id=")))
        .expect("the waiting client")
        .to_string();
    let _: i64 = redis::cmd("CLIENT")
        .arg("UNBLOCK")
        .arg(&id)
        .query(&mut c)
        .unwrap();
    assert_eq!(long.join().unwrap(), Reply::Ok(Value::Nil));
    let unloaded = cmd(&mut c, &["MODULE", "UNLOAD", "emq"]);
    assert_eq!(unloaded, Reply::Ok(Value::Okay), "the module unloads");
}

/// Issue 12, 8: another module calls a blocking claim without allowing
/// blocking. It gets the non-blocking claim's reply; the server lives.
#[test]
fn a_caller_that_cannot_block_is_not_blocked() {
    let caller = caller_module_path();
    let mut server = Server::start_with(&["--loadmodule", caller.to_str().unwrap()]);
    let mut c = server.conn();
    let empty = cmd(
        &mut c,
        &["CALLER.CALL", "E", "EMQ.WCLAIM", "q:", "1000", "BLOCK", "0"],
    );
    assert_eq!(
        empty,
        Reply::Ok(Value::Array(vec![])),
        "the plain claim's reply, at once"
    );
    cmd(&mut c, &["EMQ.ENQUEUE", "q:", "A", "1", "a1"]);
    let served = cmd(
        &mut c,
        &["CALLER.CALL", "E", "EMQ.WCLAIM", "q:", "1000", "BLOCK", "0"],
    );
    assert_eq!(served.claim().map(|t| t.2), Some(vec!["a1".to_string()]));
    assert!(server.alive());
    assert_eq!(blocked_clients(&mut c), 0);
}

/// Another module's call that allows blocking (`K`): the claim blocks (the
/// caller gets a promise), an ENQUEUE wakes it and it is served, as a
/// client's would be; the server lives and no waiter is left behind.
/// (Redis 7.0 has no `K`: the call fails in the server, before emq.)
#[test]
fn a_caller_that_allows_blocking_is_served_when_woken() {
    let caller = caller_module_path();
    let mut server = Server::start_with(&["--loadmodule", caller.to_str().unwrap()]);
    let mut c = server.conn();
    let r = cmd(
        &mut c,
        &["CALLER.CALL", "KE", "EMQ.WCLAIM", "k:", "60000", "BLOCK", "0"],
    );
    if r.err().is_some_and(|e| e.contains("RM_Call failed")) {
        assert!(server.alive());
        return;
    }
    assert_eq!(r, Reply::Ok(Value::SimpleString("PROMISE".into())));
    assert_eq!(
        info_text(&mut c, "emq", "emq_blocked_clients").as_deref(),
        Some("1")
    );
    cmd(&mut c, &["EMQ.ENQUEUE", "k:", "A", "1", "a1"]);
    wait_for("the waiter served", || {
        info_text(&mut c, "emq", "emq_blocked_clients").as_deref() == Some("0")
    });
    let leased: Option<f64> = redis::cmd("ZSCORE")
        .arg("k:leases")
        .arg("a1")
        .query(&mut c)
        .unwrap();
    assert!(leased.is_some(), "a1 went to the module's waiting claim");
    assert!(server.alive());
}

/// Issue 12, 9: key permissions apply to every key a call touches. A user
/// allowed only the key `q` (the declared prefix) may not write `qg:A:pending`
/// through EMQ.ENQUEUE: refused, nothing written, in the ACL log — also from
/// a script and from another module's call as that user. A user whose
/// patterns cover each key touched (and nothing more) may.
#[test]
fn key_permissions_cover_every_key_a_call_touches() {
    let caller = caller_module_path();
    let server = Server::start_with(&["--loadmodule", caller.to_str().unwrap()]);
    let mut admin = server.conn();
    let user = |name: &str, patterns: &[&str]| {
        let mut setuser = redis::cmd("ACL");
        setuser
            .arg("SETUSER")
            .arg(name)
            .arg("on")
            .arg("nopass")
            .arg("+@all")
            .arg("resetkeys");
        for p in patterns {
            setuser.arg(*p);
        }
        let _: () = setuser.query(&mut server.conn()).unwrap();
        let mut c = server.conn();
        let _: () = redis::cmd("AUTH").arg(name).arg("x").query(&mut c).unwrap();
        c
    };
    let before = digest(&mut admin);
    let mut narrow = user("narrow", &["~q"]);
    let refused = [
        cmd(&mut narrow, &["EMQ.ENQUEUE", "q", "A", "1", "j"]),
        cmd(
            &mut narrow,
            &[
                "EVAL",
                "return redis.call('EMQ.ENQUEUE', KEYS[1], 'A', '1', 'j')",
                "1",
                "q",
            ],
        ),
        cmd(
            &mut narrow,
            &["CALLER.CALL", "CE", "EMQ.ENQUEUE", "q", "A", "1", "j"],
        ),
        cmd(&mut narrow, &["EMQ.WCLAIM", "q", "1000"]),
    ];
    for r in &refused {
        assert!(r.err().is_some_and(|e| e.contains("NOPERM")), "{r:?}");
    }
    assert_eq!(digest(&mut admin), before, "nothing written");
    let log: Vec<Value> = redis::cmd("ACL").arg("LOG").query(&mut admin).unwrap();
    assert!(format!("{log:?}").contains("qg"), "the denial is in ACL LOG");

    let mut wide = user("wide", &["~q*"]);
    assert_eq!(
        cmd(&mut wide, &["EMQ.ENQUEUE", "q", "A", "1", "j"]),
        Reply::Ok(Value::Int(1))
    );
    let keys = [
        "~q",
        "~qgring",
        "~qg:A:pending",
        "~qgactive",
        "~qglimit",
        "~qgpaused",
        "~qjlease",
        "~qjdead",
    ];
    let mut exact = user("exact", &keys);
    assert_eq!(
        cmd(&mut exact, &["EMQ.ENQUEUE", "q", "A", "2", "k"]),
        Reply::Ok(Value::Int(1))
    );
    let other_lane = cmd(&mut exact, &["EMQ.ENQUEUE", "q", "B", "2", "k"]);
    assert!(
        other_lane.err().is_some_and(|e| e.contains("NOPERM")),
        "{other_lane:?}"
    );
    // A module's call that does not run as the user is the module's own.
    let as_module = cmd(
        &mut narrow,
        &["CALLER.CALL", "E", "EMQ.ENQUEUE", "q", "A", "3", "m"],
    );
    assert_eq!(as_module, Reply::Ok(Value::Int(1)));
}

/// Issue 12, 10: `INFO emq` counts what clients asked for: a replica
/// applying its primary's turns and an AOF being loaded count nothing.
#[test]
fn counters_count_client_work_only() {
    let primary = Server::start_with(&["--appendonly", "yes", "--emq.replicate", "command"]);
    let replica = Server::start_with(&["--emq.replicate", "command"]);
    let mut r = replicate_into(&replica, &primary);
    let mut c = primary.conn();
    cmd(&mut c, &["EMQ.ENQUEUE", "q:", "A", "1", "a1", "2", "a2"]);
    cmd(&mut c, &["EMQ.WCLAIM", "q:", "60000"]);
    in_sync(&mut c, &mut r);
    let field = |c: &mut redis::Connection, f: &str| info_text(c, "emq", f).unwrap();
    assert_eq!(field(&mut c, "emq_jobs_enqueued"), "2");
    assert_eq!(field(&mut c, "emq_claims"), "1");
    assert_eq!(
        field(&mut r, "emq_jobs_enqueued"),
        "0",
        "the replica applied, no client asked"
    );
    assert_eq!(field(&mut r, "emq_claims"), "0");
    assert_eq!(digest(&mut c), digest(&mut r));
    drop(r);
    drop(replica);
    let primary = primary.restart(&["--appendonly", "yes", "--emq.replicate", "command"]);
    let mut c = primary.conn();
    assert_eq!(
        field(&mut c, "emq_jobs_enqueued"),
        "0",
        "an AOF load is not client work"
    );
    assert_eq!(field(&mut c, "emq_claims"), "0");
}

// ---- found by trying to break it again (after issue 12) ----

/// `emq.replicate command`: a turn that removed a duplicate after its last
/// leased job replicates as one EMQ.TURN carrying the turn's K, so the
/// replica (and the AOF) removes the same duplicate — else the job, still
/// pending there, could be leased again after a failover.
#[test]
fn a_duplicate_removed_after_the_last_leased_job_reaches_the_replica() {
    let primary = Server::start_with(&["--appendonly", "yes", "--emq.replicate", "command"]);
    let replica = Server::start_with(&["--emq.replicate", "command"]);
    let mut r = replicate_into(&replica, &primary);
    let mut c = primary.conn();
    let p = "d{q}:";
    cmd(&mut c, &["EMQ.ENQUEUE", p, "B", "0", "c"]);
    cmd(&mut c, &["EMQ.ENQUEUE", p, "A", "1", "a", "2", "b", "3", "c"]);
    cmd(&mut c, &["EMQ.CLAIM", p, "100000"]); // leases c from B
    cmd(&mut c, &["EMQ.WEIGHT", p, "A", "3"]);
    let (lane, _, jobs) = cmd(&mut c, &["EMQ.WCLAIM", p, "100000"]).claim().unwrap();
    assert_eq!(
        (lane.as_str(), jobs),
        ("A", vec!["a".to_string(), "b".to_string()])
    );
    in_sync(&mut c, &mut r);
    let want = digest(&mut c);
    assert_eq!(digest(&mut r), want, "the replica removed c from A too");
    drop(r);
    drop(replica);
    let primary = primary.restart(&["--appendonly", "yes", "--emq.replicate", "command"]);
    assert_eq!(digest(&mut primary.conn()), want, "and so does the AOF");
}

/// Removing a lane ringed twice from a long ring (a quicklist): exactly its
/// copies go, on the primary and on the replica alike.
#[test]
fn a_lane_ringed_twice_leaves_a_long_ring_whole() {
    let primary = Server::start();
    let replica = Server::start_plain(&[]);
    let mut r = replicate_into(&replica, &primary);
    let mut c = primary.conn();
    let p = "r{q}:";
    // Long names: the ring is a quicklist on every server.
    let name = |l: &str| format!("{l}{}", "x".repeat(3_000));
    for l in ["B", "X", "ab", "L", "Z"] {
        cmd(&mut c, &["EMQ.ENQUEUE", p, &name(l), "1", &format!("{l}1")]);
    }
    for l in ["ab", "Y"] {
        rpush(&mut c, &format!("{p}gring"), &name(l));
    }
    cmd(&mut c, &["EMQ.PAUSE", p, &name("ab")]);
    let want: Vec<String> = ["B", "X", "L", "Z", "Y"].iter().map(|l| name(l)).collect();
    assert_eq!(ring(&mut c, p), want, "both copies of ab went, nothing else");
    in_sync(&mut c, &mut r);
    assert_eq!(digest(&mut c), digest(&mut r));
}

/// The module unloads and loads again (an upgrade in place): the `emq` ACL
/// category, which outlives the module, is found rather than added twice.
#[test]
fn the_module_loads_again_after_an_unload() {
    let server = Server::start_with(&["--enable-module-command", "local"]);
    let mut c = server.conn();
    assert_eq!(cmd(&mut c, &["MODULE", "UNLOAD", "emq"]), Reply::Ok(Value::Okay));
    let path = module_path();
    let loaded = cmd(&mut c, &["MODULE", "LOAD", path.to_str().unwrap()]);
    assert_eq!(loaded, Reply::Ok(Value::Okay), "{}", server.log());
    assert_eq!(
        cmd(&mut c, &["EMQ.ENQUEUE", "q:", "a", "1", "j"]),
        Reply::Ok(Value::Int(1))
    );
}

/// Events only for what changed, as the core commands: an EXTEND that does
/// not move a deadline and a LIMIT NONE of a lane with no ceiling fire
/// nothing and touch no watched key.
#[test]
fn writes_that_change_nothing_fire_nothing() {
    let server = Server::start_with(&["--notify-keyspace-events", "KEA"]);
    let mut c = server.conn();
    let p = "n{q}:";
    cmd(&mut c, &["EMQ.ENQUEUE", p, "a", "1", "a1"]);
    let (_, token, _) = cmd(&mut c, &["EMQ.CLAIM", p, "600000"]).claim().unwrap();
    let mut watcher = server.conn();
    let watch = [format!("{p}leases"), format!("{p}glimit")];
    let _: () = redis::cmd("WATCH").arg(&watch).query(&mut watcher).unwrap();
    let t = token.to_string();
    let extend: [&[u8]; 5] = [b"EMQ.EXTEND", p.as_bytes(), t.as_bytes(), b"1", b"a1"];
    assert!(
        events(&server, &mut c, p, &extend).is_empty(),
        "EXTEND moved nothing"
    );
    let limit: [&[u8]; 4] = [b"EMQ.LIMIT", p.as_bytes(), b"a", b"NONE"];
    assert!(
        events(&server, &mut c, p, &limit).is_empty(),
        "LIMIT NONE removed nothing"
    );
    let exec: Option<Vec<Value>> = redis::pipe().atomic().cmd("PING").query(&mut watcher).unwrap();
    assert!(exec.is_some(), "no watched key was touched");
    let score: f64 = redis::cmd("ZSCORE")
        .arg(format!("{p}leases"))
        .arg("a1")
        .query(&mut c)
        .unwrap();
    assert_eq!(score, token as f64, "the deadline stays");
}

/// A huge weight (with `emq.max-claim` raised) serves its K heads in time
/// that grows with K, not with its square.
#[test]
fn a_turn_of_many_heads_costs_in_proportion() {
    let server = Server::start_with(&["--emq.max-claim", "1000000"]);
    let mut c = server.conn();
    let elapsed = |c: &mut redis::Connection, n: usize| -> Duration {
        let p = format!("k{n}{{q}}:");
        let mut pipe = redis::pipe();
        for chunk in (0..n).collect::<Vec<_>>().chunks(1000) {
            let mut enqueue = redis::cmd("EMQ.ENQUEUE");
            enqueue.arg(&p).arg("a");
            for i in chunk {
                enqueue.arg(i).arg(format!("j{i}"));
            }
            pipe.add_command(enqueue).ignore();
        }
        pipe.query::<()>(c).unwrap();
        cmd(c, &["EMQ.WEIGHT", &p, "a", &n.to_string()]);
        let start = Instant::now();
        let (_, _, jobs) = cmd(c, &["EMQ.WCLAIM", &p, "60000"]).claim().unwrap();
        assert_eq!(jobs.len(), n);
        start.elapsed()
    };
    let small = elapsed(&mut c, 20_000);
    let large = elapsed(&mut c, 200_000);
    assert!(
        large < small * 40,
        "10x the heads took {:?} vs {:?}",
        large,
        small
    );
}

/// A dropped lease is reported: counted in `INFO emq` and written to the
/// server's log (once a second at most, however many).
#[test]
fn a_dropped_lease_is_counted_and_logged() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "r{q}:";
    cmd(&mut c, &["EMQ.ENQUEUE", p, "A", "1", "a1", "2", "a2", "3", "a3"]);
    cmd(&mut c, &["EMQ.WEIGHT", p, "A", "3"]);
    cmd(&mut c, &["EMQ.WCLAIM", p, "1"]).claim().unwrap();
    hset(&mut c, &format!("{p}jlease"), "a1", "garbage");
    hset(&mut c, &format!("{p}jlease"), "a2", "1e999 A");
    thread::sleep(Duration::from_millis(5));
    cmd(&mut c, &["EMQ.REAP", p]);
    let dropped = info_text(&mut c, "emq", "emq_records_dropped");
    assert_eq!(dropped.as_deref(), Some("2"), "a1 and a2 dropped, a3 returned");
    let log = server.log();
    assert!(
        log.contains("r{q}:") && log.contains("a1"),
        "the log names the queue and the job: {}",
        log.lines()
            .filter(|l| l.contains("emq"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// A lease that runs out while writes are paused (`CLIENT PAUSE … WRITE`, as
/// a failover pauses them) with a client waiting: the expiry timer writes
/// nothing during the pause (with the AOF on and a replica attached a write
/// then aborts the server) and returns the lease once writes resume.
#[test]
fn the_expiry_timer_writes_nothing_while_writes_are_paused() {
    let mut primary = Server::start_with(&["--appendonly", "yes"]);
    let replica = Server::start_plain(&[]);
    let mut r = replicate_into(&replica, &primary);
    let mut c = primary.conn();
    let p = "pause{q}:";
    cmd(&mut c, &["EMQ.ENQUEUE", p, "A", "1", "a1"]);
    cmd(&mut c, &["EMQ.CLAIM", p, "300"]).claim().expect("a1 leased");
    let waiter = primary.call_in_thread(&["EMQ.CLAIM", p, "60000", "BLOCK", "10000"]);
    wait_for("the waiter", || {
        info_text(&mut c, "emq", "emq_blocked_clients").as_deref() == Some("1")
    });
    cmd(&mut c, &["CLIENT", "PAUSE", "1500", "WRITE"]);
    let before = digest(&mut c);
    thread::sleep(Duration::from_millis(900)); // the lease ran out meanwhile
    assert!(primary.alive(), "the server survived the pause");
    assert_eq!(digest(&mut c), before, "nothing written during the pause");
    let (lane, _, jobs) = waiter
        .join()
        .unwrap()
        .claim()
        .expect("served once writes resumed");
    assert_eq!((lane.as_str(), jobs), ("A", vec!["a1".to_string()]));
    in_sync(&mut c, &mut r);
    assert_eq!(digest(&mut c), digest(&mut r));
}

/// A record whose mint is damaged but whose lane is readable: the lease is
/// dropped when it ends, and its lane's count drops with it (the record
/// counted it, as REPAIR counts it), so a lane at its ceiling serves again.
#[test]
fn a_dropped_lease_of_a_known_lane_frees_its_place_under_the_ceiling() {
    both(|c, emq, p| {
        emq.run(c, "enqueue", &[p, "A", "1", "a1", "2", "a2", "3", "a3"]);
        emq.run(c, "limit", &[p, "A", "1"]);
        let (_, token, jobs) = emq.run(c, "claim", &[p, "60000"]).claim().unwrap();
        assert_eq!(jobs, ["a1"]);
        hset(c, &format!("{p}jlease"), "a1", "1e999 A");
        assert_eq!(
            emq.run(c, "ack", &[p, &token.to_string(), "a1"]),
            Reply::Ok(Value::Int(0)),
            "{:?}: dropped, not counted",
            emq.flavor
        );
        let active = hget(c, &format!("{p}gactive"), "A");
        assert_eq!(active, None, "{:?}: A's count dropped with its lease", emq.flavor);
        let (lane, _, jobs) = emq
            .run(c, "claim", &[p, "60000"])
            .claim()
            .expect("A is below its ceiling again");
        assert_eq!((lane.as_str(), jobs), ("A", vec!["a2".to_string()]));
    });
}

/// A claim's expired-leases-first step returns the jobs of a lane whose own
/// numbers are damaged (its count drops if it is a number; its ring is left
/// for REPAIR), native and twin alike.
#[test]
fn a_damaged_lanes_expired_jobs_go_back_to_it() {
    both(|c, emq, p| {
        emq.run(c, "enqueue", &[p, "A", "1", "a1", "2", "a2"]);
        emq.run(c, "weight", &[p, "A", "2"]);
        emq.run(c, "wclaim", &[p, "1"]).claim().expect("a1, a2 leased");
        emq.run(c, "enqueue", &[p, "B", "1", "b1"]);
        hset(c, &format!("{p}glimit"), "A", "x");
        thread::sleep(Duration::from_millis(5));
        let (lane, _, jobs) = emq.run(c, "claim", &[p, "60000"]).claim().expect("B served");
        assert_eq!((lane.as_str(), jobs), ("B", vec!["b1".to_string()]));
        let pending: Vec<String> = redis::cmd("ZRANGE")
            .arg(format!("{p}g:A:pending"))
            .arg(0)
            .arg(-1)
            .query(c)
            .unwrap();
        assert_eq!(pending, ["a1", "a2"], "{:?}: A's jobs went back", emq.flavor);
        let active = hget(c, &format!("{p}gactive"), "A");
        assert_eq!(active, None, "{:?}: A's count dropped", emq.flavor);
        assert_eq!(
            ring(c, p),
            Vec::<String>::new(),
            "{:?}: A's ring membership left as it was",
            emq.flavor
        );
    });
}

/// A dropped lease whose record names a lane with damaged numbers never
/// fails the ACK or NACK of the sound leases beside it; and a negative
/// count is damage a release leaves as it is (not rounded away), native and
/// twin alike.
#[test]
fn a_dropped_lease_never_fails_its_neighbours_and_a_negative_count_stays() {
    both(|c, emq, p| {
        emq.run(c, "enqueue", &[p, "a", "1", "j1", "2", "j2"]);
        emq.run(c, "weight", &[p, "a", "2"]);
        let (_, token, _) = emq.run(c, "wclaim", &[p, "100000"]).claim().unwrap();
        hset(c, &format!("{p}jlease"), "j2", "bad b");
        hset(c, &format!("{p}gactive"), "b", "x");
        let t = token.to_string();
        assert_eq!(
            emq.run(c, "ack", &[p, &t, "j1", "j2"]),
            Reply::Ok(Value::Int(1)),
            "{:?}: j1 acked, j2 dropped",
            emq.flavor
        );
        let b = hget(c, &format!("{p}gactive"), "b");
        assert_eq!(
            b.as_deref(),
            Some("x"),
            "{:?}: b's damage left for REPAIR",
            emq.flavor
        );

        emq.run(c, "enqueue", &[p, "d", "1", "d1", "2", "d2"]);
        let (_, token, _) = emq.run(c, "claim", &[p, "100000"]).claim().expect("d1");
        hset(c, &format!("{p}gactive"), "d", "-1");
        emq.run(c, "nack", &[p, &token.to_string(), "d1"]);
        let d = hget(c, &format!("{p}gactive"), "d");
        assert_eq!(
            d.as_deref(),
            Some("-1"),
            "{:?}: the negative count stays visible",
            emq.flavor
        );
    });
}
