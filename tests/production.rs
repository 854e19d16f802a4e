//! What a deployment needs beyond the replies (docs/production.md): WATCH
//! and keyspace notifications see the writes as they see the core commands
//! the scripts run, the metadata tells the truth, the ACL category, INFO and
//! the configs work, and a full server can still be drained.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use support::fixtures::{fill, served};
use support::twins::{native_command, Host, Twins};
use support::{info_field, Conn, Server, Value};

#[test]
fn a_watched_key_touched_by_emq_fails_the_transaction() {
    let server = Server::start();
    let mut c = server.conn();
    let mut other = server.conn();
    fill(&mut c, "w:", "a", 2);
    let cases: &[(&str, &[&str])] = &[
        ("w:ring", &["EMQ.CLAIM", "w:", "60000"]),
        ("w:job:JOB-a-00002", &["EMQ.CLAIM", "w:", "60000"]),
        ("w:g:b:pending", &["EMQ.ENQUEUE", "w:", "b", "JOBk", "x"]),
        ("w:gweight", &["EMQ.WEIGHT", "w:", "a", "3"]),
        ("w:paused", &["EMQ.PAUSE", "w:", "a"]),
        ("w:pending", &["EMQ.QENQUEUE", "w:", "JOBf", "x"]),
        ("w:job:JOBf", &["EMQ.QCLAIM", "w:", "60000"]),
        ("w:active", &["EMQ.MEXTEND", "w:", "90000", "JOBf", "1"]),
        ("w:schedule", &["EMQ.QSCHEDULE", "w:", "JOBg", "x", "IN", "1000"]),
        ("w:meta", &["EMQ.QPAUSE", "w:"]),
    ];
    for (key, command) in cases {
        c.ok(&["WATCH", key]);
        other.ok(command);
        let r = c
            .pipeline(&[
                vec![b"MULTI".to_vec()],
                vec![b"PING".to_vec()],
                vec![b"EXEC".to_vec()],
            ])
            .unwrap();
        assert_eq!(
            r[2],
            Ok(Value::Nil),
            "{command:?} should have failed a WATCH on {key}"
        );
    }
    // A key the command does not write is not reported modified.
    c.ok(&["WATCH", "w:gweight"]);
    other.ok(&["EMQ.LANE", "w:", "a"]);
    other.ok(&["EMQ.QUEUE", "w:"]);
    let r = c
        .pipeline(&[
            vec![b"MULTI".to_vec()],
            vec![b"PING".to_vec()],
            vec![b"EXEC".to_vec()],
        ])
        .unwrap();
    assert_ne!(r[2], Ok(Value::Nil), "a read-only command failed the transaction");
}

/// The (event, key without `prefix`) pairs the commands `cmds` fire, with
/// `notify-keyspace-events KEA`.
fn events(server: &Server, c: &mut Conn, prefix: &str, cmds: &[Vec<Vec<u8>>]) -> BTreeSet<(String, String)> {
    let mut sub = server.conn();
    sub.ok(&["PSUBSCRIBE", "__keyevent@0__:*"]);
    sub.set_timeout(Some(Duration::from_secs(5)));
    for cmd in cmds {
        let r = c.call(&cmd.iter().map(Vec::as_slice).collect::<Vec<_>>());
        assert!(r.is_ok(), "{r:?}");
    }
    c.ok(&["SET", "sentinel", "1"]);
    let mut seen = BTreeSet::new();
    loop {
        let msg = sub.read().expect("a notification").expect("a message");
        let parts = msg.texts();
        let event = parts[2].trim_start_matches("__keyevent@0__:").to_string();
        if parts[3] == "sentinel" {
            return seen;
        }
        seen.insert((
            event,
            parts[3].strip_prefix(prefix).unwrap_or(&parts[3]).to_string(),
        ));
    }
}

#[test]
fn keyspace_notifications_are_among_the_scripts_own() {
    let server = Server::start_with(&["--notify-keyspace-events", "KEA", "--emq.reap-on-claim", "0"]);
    let mut c = server.conn();
    let twins = Twins::load(&mut c);
    // Each step runs natively on n{q}: and as its script on l{q}:; the native
    // events must be among the script's (the core commands' own).
    let steps: &[(&str, &[&str])] = &[
        ("enqueue", &["a", "JOBa1", "x", "JOBa2", "y"]),
        ("enqueue", &["b", "JOBb1", "x", "JOBb2", "y"]),
        ("weight", &["a", "2"]),
        ("wclaim", &["60000"]),
        ("claim", &["60000"]),
        ("limit", &["a", "1"]),
        ("pause", &["b"]),
        ("resume", &["b"]),
        ("reassign", &["JOBb2", "a"]),
        ("complete", &["JOBa1", "1"]),
        ("retry", &["JOBa2", "1", "0", "5", "e"]),
        ("promote", &[]),
        ("bclaim", &["1"]),
        ("reap", &[]),
        ("delay", &["JOBb1", "1", "IN", "0"]),
        ("drain", &["a"]),
        ("qpause", &[]),
        ("qresume", &[]),
        ("qenqueue", &["JOBf1", "x", "JOBf2", "y"]),
        ("qschedule", &["JOBf3", "z", "IN", "600000"]),
        ("qclaim", &["60000"]),
        ("qbclaim", &["60000", "2"]),
        ("mextend", &["120000", "JOBf1", "1", "JOBf2", "1"]),
        ("setdata", &["JOBf1", "new"]),
        ("progress", &["JOBf1", "50"]),
        ("log", &["JOBf1", "one"]),
        ("log", &["JOBf1", "two", "KEEP", "1"]),
        ("remove", &["JOBf1"]),
        ("qdrain", &["SCHEDULE"]),
    ];
    let mut native_all = BTreeSet::new();
    for (name, args) in steps {
        std::thread::sleep(Duration::from_millis(3));
        let with = |p: &'static str| -> Vec<&[u8]> {
            std::iter::once(p.as_bytes())
                .chain(args.iter().map(|a| a.as_bytes()))
                .collect()
        };
        let native = vec![native_command(name, &with("n{q}:"))];
        let lua = match twins.host(&mut c, name, &with("l{q}:")) {
            Host::Calls(calls) => calls,
            Host::Answer(_) => vec![],
        };
        let n = events(&server, &mut c, "n{q}:", &native);
        let l = events(&server, &mut c, "l{q}:", &lua);
        // DELAY ends a lane job's lease where the script does not (a named
        // difference): its count's events are its own.
        let own: BTreeSet<(String, String)> = match *name {
            "delay" => ["hincrby", "hdel", "del"]
                .iter()
                .map(|e| (e.to_string(), "gactive".to_string()))
                .collect(),
            _ => BTreeSet::new(),
        };
        assert!(
            n.difference(&own).all(|e| l.contains(e)),
            "{name} {args:?}: native {n:?} vs script {l:?}"
        );
        assert!(
            !n.is_empty() || l.is_empty(),
            "{name}: the native command fired nothing"
        );
        native_all.extend(n);
    }
    for expected in [
        ("hset", "job:JOBa1"),
        ("zadd", "g:a:pending"),
        ("rpush", "ring"),
        ("lpush", "wake"),
        ("ltrim", "wake"),
        ("lpop", "ring"),
        ("zpopmin", "g:a:pending"),
        ("hincrby", "job:JOBa1"),
        ("zadd", "active"),
        ("hincrby", "gactive"),
        ("sadd", "paused"),
        ("lrem", "ring"),
        ("del", "job:JOBa1"),
        ("hincrby", "metrics:completed"),
        ("zadd", "schedule"),
        ("hset", "meta"),
    ] {
        assert!(
            native_all.contains(&(expected.0.to_string(), expected.1.to_string())),
            "no {expected:?} in {native_all:?}"
        );
    }
}

fn command_info(c: &mut Conn, name: &str) -> Vec<Value> {
    let outer = c.ok(&["COMMAND", "INFO", name]);
    outer.items()[0].items().to_vec()
}

#[test]
fn command_info_and_docs_tell_the_truth() {
    let server = Server::start();
    let mut c = server.conn();
    let expect: &[(&str, i64, &[&str])] = &[
        ("emq.claim", -3, &["write", "fast", "blocking"]),
        ("emq.wclaim", -3, &["write", "blocking"]),
        ("emq.bclaim", -3, &["write", "blocking"]),
        ("emq.enqueue", -5, &["write", "denyoom"]),
        ("emq.weight", 4, &["write", "fast"]),
        ("emq.pause", -3, &["write"]),
        ("emq.resume", 3, &["write", "fast"]),
        ("emq.limit", 4, &["write"]),
        ("emq.rate", -4, &["write"]),
        ("emq.reassign", 4, &["write"]),
        ("emq.drain", 3, &["write"]),
        ("emq.complete", 4, &["write", "fast"]),
        ("emq.retry", 7, &["write", "fast"]),
        ("emq.delay", 6, &["write", "fast"]),
        ("emq.extend", 5, &["write", "fast"]),
        ("emq.reap", -2, &["write"]),
        ("emq.promote", -2, &["write"]),
        ("emq.qpause", 2, &["write", "fast"]),
        ("emq.qresume", 2, &["write", "fast"]),
        ("emq.policy", -4, &["write", "fast"]),
        ("emq.dead", -2, &["readonly"]),
        ("emq.revive", -3, &["write"]),
        ("emq.lane", 3, &["readonly"]),
        ("emq.queue", 2, &["readonly"]),
        ("emq.lanes", -3, &["readonly"]),
        ("emq.stats", -2, &["readonly"]),
        ("emq.repair", -3, &["write"]),
    ];
    for (name, arity, flags) in expect {
        let info = command_info(&mut c, name);
        assert_eq!(info[0].text(), *name);
        assert_eq!(info[1], Value::Int(*arity), "{name} arity");
        let got: BTreeSet<String> = info[2].items().iter().map(Value::text).collect();
        for f in *flags {
            assert!(got.contains(*f), "{name}: flag {f} missing from {got:?}");
        }
        assert_eq!(
            got.contains("denyoom"),
            *name == "emq.enqueue",
            "{name}: only ENQUEUE is refused on a full server"
        );
        assert_eq!(got.contains("readonly"), !got.contains("write"), "{name}");
        assert_eq!(
            (&info[3], &info[4], &info[5]),
            (&Value::Int(1), &Value::Int(1), &Value::Int(1)),
            "{name} keys"
        );
        let mut getkeys = vec!["COMMAND", "GETKEYS", name, "emq:{q}:"];
        getkeys.extend(std::iter::repeat_n("1", arity.unsigned_abs() as usize - 2));
        assert_eq!(
            c.cmd(&getkeys),
            Ok(Value::Array(vec![Value::Bulk(b"emq:{q}:".to_vec())])),
            "{name}"
        );
        let docs = c.ok(&["COMMAND", "DOCS", name]).render();
        for part in ["summary", "since", "0.3.0", "complexity", "arguments", "prefix"] {
            assert!(docs.contains(part), "{name}: COMMAND DOCS lacks {part}: {docs}");
        }
    }
    assert_eq!(
        c.cmd(&["EMQ.WCLAIM", "q:"]).unwrap_err(),
        "ERR wrong number of arguments for 'emq.wclaim' command"
    );
}

#[test]
fn an_emq_acl_category_where_the_server_has_custom_categories() {
    let server = Server::start();
    let mut c = server.conn();
    let cats = c.ok(&["ACL", "CAT"]).texts();
    let has_custom = cats.iter().any(|c| c == "emq");
    let version = info_field(&mut c, "server", "redis_version").unwrap();
    let valkey = info_field(&mut c, "server", "valkey_version").is_some();
    if !valkey && version.as_str() < "7.4" {
        assert!(!has_custom, "Redis {version} has no custom categories");
        return; // loaded and degraded, as the log says
    }
    assert!(has_custom, "ACL CAT lacks emq: {cats:?}");
    let members: BTreeSet<String> = c.ok(&["ACL", "CAT", "emq"]).texts().into_iter().collect();
    let mut all: BTreeSet<String> = c
        .ok(&["COMMAND", "LIST", "FILTERBY", "MODULE", "emq"])
        .texts()
        .into_iter()
        .collect();
    all.remove("emq.turn");
    assert!(all.len() >= 32, "{all:?}");
    assert_eq!(members, all, "every client command, not EMQ.TURN");
    assert!(!members.contains("emq.turn"));
    c.ok(&["ACL", "SETUSER", "worker", "on", ">pw", "~emq:{a}:*", "+@emq"]);
    let mut w = server.conn();
    w.ok(&["AUTH", "worker", "pw"]);
    assert_eq!(w.int(&["EMQ.ENQUEUE", "emq:{a}:", "l", "JOB1", "x"]), 1);
    assert_eq!(served(&w.ok(&["EMQ.WCLAIM", "emq:{a}:", "1000"])).len(), 1);
    assert!(w
        .cmd(&["SET", "emq:{a}:x", "1"])
        .unwrap_err()
        .starts_with("NOPERM"));
}

#[test]
fn info_emq_counts_and_the_configs_apply() {
    let server = Server::start_with(&["--emq.max-claim", "3"]);
    let mut c = server.conn();
    let field = |c: &mut Conn, f: &str| info_field(c, "emq", &format!("emq_{f}")).unwrap();
    assert_eq!(field(&mut c, "max_claim"), "3", "set at load");
    assert_eq!(field(&mut c, "job_kind"), "JOB");
    assert_eq!(field(&mut c, "replicate"), "effects");
    fill(&mut c, "i:", "a", 10);
    c.ok(&["EMQ.WEIGHT", "i:", "a", "100"]);
    let jobs = served(&c.ok(&["EMQ.WCLAIM", "i:", "60000"]));
    assert_eq!(jobs.len(), 3, "emq.max-claim caps a weight of 100");
    c.ok(&["CONFIG", "SET", "emq.max-claim", "5"]);
    assert_eq!(
        served(&c.ok(&["EMQ.BCLAIM", "i:", "60000"])).len(),
        5,
        "and a batch"
    );
    c.int(&["EMQ.COMPLETE", "i:", &jobs[0].0, "1"]);
    c.ok(&["EMQ.RETRY", "i:", &jobs[1].0, "1", "0", "5", "e"]);
    c.ok(&["EMQ.CLAIM", "empty:", "1000"]);
    for (f, v) in [
        ("claims", "2"),
        ("claims_empty", "1"),
        ("jobs_claimed", "8"),
        ("jobs_enqueued", "10"),
        ("jobs_completed", "1"),
        ("jobs_retried", "1"),
        ("max_claim", "5"),
    ] {
        assert_eq!(field(&mut c, f), v, "emq_{f}");
    }
    assert!(
        c.cmd(&["CONFIG", "SET", "emq.max-claim", "0"]).is_err(),
        "a cap below 1 is refused"
    );
    c.ok(&["CONFIG", "SET", "emq.reap-on-claim", "0"]);
    assert_eq!(field(&mut c, "reap_on_claim"), "0");
}

#[test]
fn configs_are_read_from_a_config_file_and_loadmodule_arguments() {
    let module = support::server::module_path().display().to_string();
    let s = Server::start_conf(&format!(
        "loadmodule {module}\nemq.job-kind TSK\nemq.reap-on-claim 7\n"
    ));
    let mut c = s.conn();
    assert_eq!(info_field(&mut c, "emq", "emq_job_kind").as_deref(), Some("TSK"));
    assert_eq!(
        info_field(&mut c, "emq", "emq_reap_on_claim").as_deref(),
        Some("7")
    );
    let s = Server::start_module_args(&["job-kind", "ABC"]);
    let mut c = s.conn();
    assert_eq!(info_field(&mut c, "emq", "emq_job_kind").as_deref(), Some("ABC"));
}

/// A name `loadmodule` does not take (the config file's `emq.` form, a
/// misspelling) refuses the load, where it would load with the default.
#[test]
fn loadmodule_refuses_a_config_name_it_does_not_take() {
    let server = Server::start_plain(&["--enable-module-command", "yes"]);
    let mut c = server.conn();
    let module = support::server::module_path().display().to_string();
    let refused = c.cmd(&["MODULE", "LOAD", &module, "emq.replicate", "command"]);
    assert!(refused.is_err(), "refused: {refused:?}");
    assert!(
        server
            .log()
            .contains("loadmodule argument 'emq.replicate' is no config of emq (as a loadmodule argument its name is 'replicate')"),
        "the log says why"
    );
    assert!(c.cmd(&["EMQ.QUEUE", "q:"]).is_err(), "not loaded");
    c.ok(&["MODULE", "LOAD", &module, "replicate", "command"]);
    assert_eq!(
        info_field(&mut c, "emq", "emq_replicate").as_deref(),
        Some("command")
    );
}

#[test]
fn a_full_server_refuses_enqueue_but_workers_can_drain_it() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, "o:", "a", 50);
    c.ok(&["CONFIG", "SET", "maxmemory-policy", "noeviction"]);
    c.ok(&["CONFIG", "SET", "maxmemory", "1"]);
    assert!(c
        .cmd(&["EMQ.ENQUEUE", "o:", "a", "JOBmore", "x"])
        .unwrap_err()
        .starts_with("OOM"));
    c.ok(&["EMQ.WEIGHT", "o:", "a", "5"]);
    let jobs = served(&c.ok(&["EMQ.WCLAIM", "o:", "1"]));
    assert_eq!(jobs.len(), 5, "claims work when full");
    assert_eq!(c.int(&["EMQ.COMPLETE", "o:", &jobs[0].0, "1"]), 1);
    std::thread::sleep(Duration::from_millis(5));
    assert!(c.cmd(&["EMQ.REAP", "o:"]).is_ok(), "reap works when full");
    c.ok(&["CONFIG", "SET", "maxmemory", "0"]);
}

#[test]
fn module_list_and_info_tell_the_build() {
    let server = Server::start();
    let mut c = server.conn();
    let list = c.ok(&["MODULE", "LIST"]).render();
    assert!(
        list.contains("emq") && list.contains("300"),
        "version 0.3.0: {list}"
    );
    assert_eq!(info_field(&mut c, "emq", "emq_version").as_deref(), Some("0.3.0"));
    assert!(info_field(&mut c, "emq", "emq_commit").is_some_and(|v| !v.is_empty()));
}
