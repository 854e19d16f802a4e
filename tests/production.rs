//! What a deployment needs beyond the commands' replies (SPEC section 4):
//! replication and persistence reach the primary's keyspace, writes count
//! for save points, WATCH and keyspace notifications see them, the metadata
//! tells the truth, INFO and the config work, and a full server can drain.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::rng::Rng;
use common::*;

#[test]
fn a_replica_without_the_module_reaches_the_primarys_keyspace() {
    let primary = Server::start();
    let replica = Server::start_plain(&[]);
    let mut r = replicate_into(&replica, &primary);
    let mut p = primary.conn();
    drive_and_compare(&mut p, &mut r, 7, &["r1{a}:", "r2{b}:", "r3{c}:"]);
}

#[test]
fn a_config_that_differs_on_the_replica_cannot_make_it_diverge() {
    let primary = Server::start();
    let replica = Server::start_with(&["--emq.max-claim", "1"]);
    let mut r = replicate_into(&replica, &primary);
    let mut p = primary.conn();
    cmd(&mut p, &["EMQ.ENQUEUE", "q:", "a", "1", "x", "2", "y", "3", "z"]);
    cmd(&mut p, &["EMQ.WEIGHT", "q:", "a", "3"]);
    let (_, _, jobs) = cmd(&mut p, &["EMQ.WCLAIM", "q:", "1000"]).claim().unwrap();
    assert_eq!(jobs.len(), 3, "the primary's cap is 1000");
    in_sync(&mut p, &mut r);
    assert_eq!(digest(&mut p), digest(&mut r));
    let cap: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("emq.max-claim")
        .query(&mut r)
        .unwrap();
    assert_eq!(
        cap,
        ["emq.max-claim", "1"],
        "the replica does run with another cap"
    );
}

#[test]
fn the_aof_replays_and_rewrites_to_the_same_keyspace() {
    let server = Server::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let mut c = server.conn();
    let mut rng = Rng::new(11);
    drive(&mut c, "aof{q}:", &mut rng, 2_000);
    let before = digest(&mut c);
    let server = server.restart(&["--appendonly", "yes"]);
    let mut c = server.conn();
    assert_eq!(digest(&mut c), before, "replaying the AOF");

    let _: Value = redis::cmd("BGREWRITEAOF").query(&mut c).unwrap();
    wait_for("the AOF rewrite", || {
        info_text(&mut c, "persistence", "aof_rewrite_in_progress").as_deref() == Some("0")
            && info_text(&mut c, "persistence", "aof_rewrite_scheduled").as_deref() == Some("0")
    });
    drive(&mut c, "aof{q}:", &mut rng, 300);
    let before = digest(&mut c);
    let server = server.restart(&["--appendonly", "yes"]);
    assert_eq!(
        digest(&mut server.conn()),
        before,
        "the rewritten AOF plus its tail"
    );
}

#[test]
fn emq_writes_count_towards_save_points() {
    let server = Server::start();
    let mut c = server.conn();
    let changes = |c: &mut redis::Connection| -> i64 {
        info_text(c, "persistence", "rdb_changes_since_last_save")
            .unwrap()
            .parse()
            .unwrap()
    };
    let mut last = changes(&mut c);
    let steps: &[&[&str]] = &[
        &["EMQ.ENQUEUE", "s:", "a", "1", "j1", "2", "j2"],
        &["EMQ.WEIGHT", "s:", "a", "2"],
        &["EMQ.CLAIM", "s:", "60000"],
        &["EMQ.LIMIT", "s:", "a", "5"],
        &["EMQ.PAUSE", "s:", "a"],
        &["EMQ.RESUME", "s:", "a"],
    ];
    for step in steps {
        assert!(cmd(&mut c, step).err().is_none());
        let now = changes(&mut c);
        assert!(now > last, "{step:?} did not count as a change ({last} -> {now})");
        last = now;
    }
}

#[test]
fn a_watched_key_touched_by_emq_fails_the_transaction() {
    let server = Server::start();
    let mut c = server.conn();
    let mut other = server.conn();
    cmd(&mut c, &["EMQ.ENQUEUE", "w:", "a", "1", "j1", "2", "j2"]);
    let cases: &[(&str, &[&str])] = &[
        ("w:gring", &["EMQ.CLAIM", "w:", "60000"]),
        ("w:g:b:pending", &["EMQ.ENQUEUE", "w:", "b", "1", "k"]),
        ("w:gweight", &["EMQ.WEIGHT", "w:", "a", "3"]),
        ("w:gpaused", &["EMQ.PAUSE", "w:", "a"]),
    ];
    for (key, command) in cases {
        let _: () = redis::cmd("WATCH").arg(*key).query(&mut c).unwrap();
        assert!(cmd(&mut other, command).err().is_none());
        let result: Option<Vec<String>> = redis::pipe().atomic().cmd("PING").query(&mut c).unwrap();
        assert_eq!(result, None, "{command:?} should have failed a WATCH on {key}");
    }
    // A key the command does not write is not reported modified.
    let _: () = redis::cmd("WATCH").arg("w:gweight").query(&mut c).unwrap();
    assert!(cmd(&mut other, &["EMQ.LANE", "w:", "a"]).err().is_none());
    let result: Option<Vec<String>> = redis::pipe().atomic().cmd("PING").query(&mut c).unwrap();
    assert!(result.is_some(), "a read-only command failed the transaction");
}

fn set(pairs: &[(&str, &str)]) -> BTreeSet<(String, String)> {
    pairs
        .iter()
        .map(|(e, k)| (e.to_string(), k.to_string()))
        .collect()
}

#[test]
fn keyspace_notifications_are_the_core_commands_events() {
    let server = Server::start_with(&["--notify-keyspace-events", "KEA"]);
    let mut c = server.conn();
    let twins = Twins::load(&mut c);
    // Each step runs natively on n{q}: and as a twin on l{q}:; the native
    // events must be among the twin's (which are the core commands' own).
    let steps: &[(&str, &[&str])] = &[
        ("enqueue", &["a", "1", "a1", "2", "a2"]),
        ("enqueue", &["b", "1", "b1", "2", "b2"]),
        ("weight", &["a", "2"]),
        ("wclaim", &["60000"]),
        ("claim", &["60000"]),
        ("limit", &["a", "1"]),
        ("pause", &["b"]),
        ("resume", &["b"]),
        ("reassign", &["b2", "b", "a"]),
        ("limit", &["a", "NONE"]),
        ("reap", &[]),
    ];
    let mut native_all = BTreeSet::new();
    for (name, args) in steps {
        let with = |p: &'static [u8]| -> Vec<&[u8]> {
            std::iter::once(p)
                .chain(args.iter().map(|a| a.as_bytes()))
                .collect()
        };
        let native = native_command(name, &with(b"n{q}:"));
        let lua_args = with(b"l{q}:");
        let lua = twins.command(name, &lua_args);
        let n = events(&server, &mut c, "n{q}:", &refs(&native));
        let l = events(&server, &mut c, "l{q}:", &refs(&lua));
        assert!(n.is_subset(&l), "{name} {args:?}: native {n:?} vs twin {l:?}");
        native_all.extend(n);
    }
    for expected in [
        ("zadd", "g:a:pending"),
        ("rpush", "gring"),
        ("hset", "gweight"),
        ("lpop", "gring"),
        ("zpopmin", "g:a:pending"),
        ("zadd", "leases"),
        ("hset", "jlease"),
        ("hincrby", "gactive"),
        ("del", "g:b:pending"),
        ("sadd", "gpaused"),
        ("lrem", "gring"),
        ("srem", "gpaused"),
        ("zrem", "g:b:pending"),
        ("hset", "glimit"),
        ("hdel", "glimit"),
    ] {
        assert!(
            native_all.contains(&(expected.0.to_string(), expected.1.to_string())),
            "no {expected:?} in {native_all:?}"
        );
    }

    // ACK of the last lease empties three keys: each gets its `del`; the
    // active count goes to 0 as HINCRBY and HDEL would take it.
    cmd(&mut c, &["EMQ.ENQUEUE", "x:", "a", "1", "only"]);
    let (_, token, jobs) = cmd(&mut c, &["EMQ.CLAIM", "x:", "60000"]).claim().unwrap();
    let t = token.to_string();
    let ack = events(
        &server,
        &mut c,
        "x:",
        &[b"EMQ.ACK", b"x:", t.as_bytes(), jobs[0].as_bytes()],
    );
    assert_eq!(
        ack,
        set(&[
            ("zrem", "leases"),
            ("del", "leases"),
            ("hdel", "jlease"),
            ("del", "jlease"),
            ("hincrby", "gactive"),
            ("hdel", "gactive"),
            ("del", "gactive")
        ])
    );
}

fn command_info(c: &mut redis::Connection, name: &str) -> Vec<Value> {
    let Value::Array(outer) = cmd(c, &["COMMAND", "INFO", name]).value().clone() else {
        panic!()
    };
    let Value::Array(info) = outer[0].clone() else {
        panic!("no COMMAND INFO for {name}: {outer:?}")
    };
    info
}

#[test]
fn command_info_and_docs_tell_the_truth() {
    let server = Server::start();
    let mut c = server.conn();
    let expect: &[(&str, i64, &[&str])] = &[
        ("emq.claim", -3, &["write", "fast", "blocking"]),
        ("emq.wclaim", -3, &["write", "fast", "blocking"]),
        ("emq.weight", 4, &["write", "fast"]),
        ("emq.enqueue", -5, &["write", "denyoom", "fast"]),
        ("emq.ack", -4, &["write", "fast"]),
        ("emq.nack", -4, &["write", "fast"]),
        ("emq.extend", -5, &["write", "fast"]),
        ("emq.reap", -2, &["write"]),
        ("emq.limit", 4, &["write"]),
        ("emq.pause", 3, &["write"]),
        ("emq.resume", 3, &["write", "fast"]),
        ("emq.reassign", 5, &["write"]),
        ("emq.lane", 3, &["readonly"]),
        ("emq.policy", 4, &["write", "fast"]),
        ("emq.dead", -2, &["readonly"]),
        ("emq.revive", -3, &["write"]),
        ("emq.queue", 2, &["readonly"]),
        ("emq.lanes", -3, &["readonly"]),
        ("emq.repair", -3, &["write"]),
    ];
    for (name, arity, flags) in expect {
        let info = command_info(&mut c, name);
        assert_eq!(text(&info[0]), *name);
        assert_eq!(info[1], Value::Int(*arity), "{name} arity");
        let Value::Array(got) = &info[2] else { panic!() };
        let got: BTreeSet<String> = got.iter().map(text).collect();
        for f in *flags {
            assert!(got.contains(*f), "{name}: flag {f} missing from {got:?}");
        }
        if !flags.contains(&"denyoom") {
            assert!(!got.contains("denyoom"), "{name} must run on a full server");
        }
        assert_eq!(
            (&info[3], &info[4], &info[5]),
            (&Value::Int(1), &Value::Int(1), &Value::Int(1)),
            "{name} keys"
        );
        // The server finds the prefix as the key.
        let mut getkeys = vec!["COMMAND", "GETKEYS", name, "emq:{q}:"];
        getkeys.extend(std::iter::repeat_n("1", arity.unsigned_abs() as usize - 2));
        let keys = cmd(&mut c, &getkeys);
        assert_eq!(
            keys,
            Reply::Ok(Value::Array(vec![Value::BulkString(b"emq:{q}:".to_vec())])),
            "{name}"
        );
        let docs = format!("{:?}", cmd(&mut c, &["COMMAND", "DOCS", name]));
        for part in ["summary", "since", "0.1.0", "complexity", "arguments", "prefix"] {
            assert!(docs.contains(part), "{name}: COMMAND DOCS lacks {part}: {docs}");
        }
    }
    // The server checks arity itself now.
    let r = cmd(&mut c, &["EMQ.WCLAIM", "q:"]);
    assert_eq!(
        r.err(),
        Some("ERR wrong number of arguments for 'emq.wclaim' command")
    );
}

#[test]
fn an_emq_acl_category_where_the_server_has_custom_categories() {
    let server = Server::start();
    let mut c = server.conn();
    let cats = cmd(&mut c, &["ACL", "CAT"]);
    let has_custom = format!("{cats:?}").contains("\"emq\"");
    let version = info_text(&mut c, "server", "redis_version").unwrap();
    let valkey = info_text(&mut c, "server", "valkey_version").is_some();
    if !valkey && version.as_str() < "7.4" {
        assert!(!has_custom, "Redis {version} has no custom categories");
        return; // loaded and degraded, as the log says
    }
    assert!(has_custom, "ACL CAT lacks emq: {cats:?}");
    let Value::Array(members) = cmd(&mut c, &["ACL", "CAT", "emq"]).value().clone() else {
        panic!()
    };
    let members: BTreeSet<String> = members.iter().map(text).collect();
    assert_eq!(members.len(), 19, "{members:?}");
    assert!(members.contains("emq.wclaim") && members.contains("emq.lane"));
    let _: () = redis::cmd("ACL")
        .arg(&["SETUSER", "worker", "on", ">pw", "~emq:{a}:*", "+@emq"])
        .query(&mut c)
        .unwrap();
    let client = redis::Client::open(format!("redis://worker:pw@127.0.0.1:{}/", server.port)).unwrap();
    let mut w = client.get_connection().unwrap();
    assert!(cmd(&mut w, &["EMQ.ENQUEUE", "emq:{a}:", "l", "1", "j"])
        .err()
        .is_none());
    assert!(cmd(&mut w, &["EMQ.WCLAIM", "emq:{a}:", "1000"]).claim().is_some());
    let refused = cmd(&mut w, &["SET", "emq:{a}:x", "1"]);
    assert!(
        refused.err().is_some_and(|e| e.starts_with("NOPERM")),
        "{refused:?}"
    );
}

#[test]
fn info_emq_counts_and_the_cap_applies() {
    let server = Server::start_with(&["--emq.max-claim", "3"]);
    let mut c = server.conn();
    let field = |c: &mut redis::Connection, f: &str| info_text(c, "emq", &format!("emq_{f}")).unwrap();
    assert_eq!(field(&mut c, "max_claim"), "3", "set at load");
    let pairs: Vec<String> = (0..10).flat_map(|i| [i.to_string(), format!("j{i}")]).collect();
    let mut args = vec!["EMQ.ENQUEUE", "i:", "a"];
    args.extend(pairs.iter().map(String::as_str));
    cmd(&mut c, &args);
    cmd(&mut c, &["EMQ.WEIGHT", "i:", "a", "100"]);
    let (_, token, jobs) = cmd(&mut c, &["EMQ.WCLAIM", "i:", "60000"]).claim().unwrap();
    assert_eq!(jobs.len(), 3, "emq.max-claim caps weight 100");
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("emq.max-claim")
        .arg("5")
        .query(&mut c)
        .unwrap();
    assert_eq!(
        cmd(&mut c, &["EMQ.WCLAIM", "i:", "60000"])
            .claim()
            .unwrap()
            .2
            .len(),
        5
    );
    let t = token.to_string();
    cmd(&mut c, &["EMQ.ACK", "i:", &t, &jobs[0], &jobs[1]]);
    cmd(&mut c, &["EMQ.NACK", "i:", &t, &jobs[2]]);
    cmd(&mut c, &["EMQ.CLAIM", "empty:", "1000"]);
    for (f, v) in [
        ("claims", "2"),
        ("claims_empty", "1"),
        ("jobs_claimed", "8"),
        ("jobs_enqueued", "10"),
        ("jobs_acked", "2"),
        ("jobs_nacked", "1"),
        ("jobs_reaped", "0"),
        ("max_claim", "5"),
    ] {
        assert_eq!(field(&mut c, f), v, "emq_{f}");
    }
    let bad = cmd(&mut c, &["CONFIG", "SET", "emq.max-claim", "0"]);
    assert!(bad.err().is_some(), "a cap below 1 is refused");
}

#[test]
fn a_full_server_refuses_enqueue_but_workers_can_drain_it() {
    let server = Server::start();
    let mut c = server.conn();
    let pairs: Vec<String> = (0..50).flat_map(|i| [i.to_string(), format!("j{i}")]).collect();
    let mut args = vec!["EMQ.ENQUEUE", "o:", "a"];
    args.extend(pairs.iter().map(String::as_str));
    cmd(&mut c, &args);
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory-policy")
        .arg("noeviction")
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("1")
        .query(&mut c)
        .unwrap();
    let refused = cmd(&mut c, &["EMQ.ENQUEUE", "o:", "a", "99", "more"]);
    assert!(refused.err().is_some_and(|e| e.starts_with("OOM")), "{refused:?}");
    cmd(&mut c, &["EMQ.WEIGHT", "o:", "a", "5"]);
    let (_, token, jobs) = cmd(&mut c, &["EMQ.WCLAIM", "o:", "1"])
        .claim()
        .expect("claims work when full");
    let t = token.to_string();
    assert_eq!(
        cmd(&mut c, &["EMQ.ACK", "o:", &t, &jobs[0]]),
        Reply::Ok(Value::Int(1))
    );
    std::thread::sleep(Duration::from_millis(5));
    let reaped = cmd(&mut c, &["EMQ.REAP", "o:"]);
    assert!(reaped.err().is_none(), "reap works when full: {reaped:?}");
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("maxmemory")
        .arg("0")
        .query(&mut c)
        .unwrap();
}

/// Batches on both sides of the size up to which effects are replicated as
/// one argument each (18: a batch of 8's `ZADD NX`), and past it, reach a
/// replica without the module and an AOF reload as the primary wrote them.
#[test]
fn batches_of_every_size_replicate_as_written() {
    replicated_and_persisted(|p| {
        for n in 1..=12usize {
            let lane = format!("l{n}");
            let mut enqueue = vec!["EMQ.ENQUEUE".to_string(), "b{q}:".into(), lane.clone()];
            for j in 0..n {
                enqueue.extend([j.to_string(), format!("{lane}-j{j}")]);
            }
            let enqueue: Vec<&str> = enqueue.iter().map(String::as_str).collect();
            assert_eq!(int_reply(p, &enqueue), n as i64);
            cmd(p, &["EMQ.WEIGHT", "b{q}:", &lane, &n.to_string()]);
        }
        // Each lane served whole (K = its weight = its depth), then half
        // acked and half given back, so ACK, NACK and the returns' ZADD all
        // take n.
        for n in 1..=12 {
            let (lane, token, jobs) = cmd(p, &["EMQ.WCLAIM", "b{q}:", "60000"]).claim().unwrap();
            assert_eq!(
                (lane, jobs.len()),
                (format!("l{n}"), n),
                "each lane whole, in ring order"
            );
            let token = token.to_string();
            let (acked, returned) = jobs.split_at(jobs.len() / 2);
            for (verb, part) in [("EMQ.ACK", acked), ("EMQ.NACK", returned)] {
                if part.is_empty() {
                    continue;
                }
                let mut args = vec![verb, "b{q}:", &token];
                args.extend(part.iter().map(String::as_str));
                assert_eq!(int_reply(p, &args), part.len() as i64);
            }
        }
    });
}
