//! `emq.replicate command`: a claim replicates as one internal `EMQ.TURN`
//! (the turn as the primary made it: lane, deadline, K), the clock-free
//! commands as themselves, EXTEND and REAP as their effects. Replicas and
//! AOF readers then need the module; in exchange a claim's replication costs
//! one command instead of five (`make bench` measures both modes).

mod common;

use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use common::rng::Rng;
use common::*;

/// `calls` of `cmdstat_<name>` in `INFO commandstats` (0 when absent).
fn calls(c: &mut redis::Connection, name: &str) -> u64 {
    let info: String = redis::cmd("INFO").arg("commandstats").query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("cmdstat_{name}:calls=")))
        .and_then(|rest| rest.split(',').next())
        .map_or(0, |n| n.parse().unwrap())
}

fn command_mode() -> Server {
    Server::start_with(&["--emq.replicate", "command"])
}

#[test]
fn a_replica_with_the_module_follows_the_turns() {
    let primary = command_mode();
    // The replica runs another cap and the default mode: neither matters,
    // since a turn carries its K and a replica replays what it is sent.
    let replica = Server::start_with(&["--emq.max-claim", "1"]);
    let mut r = replicate_into(&replica, &primary);
    let mut p = primary.conn();
    drive_and_compare(&mut p, &mut r, 21, &["t1{a}:", "t2{b}:", "t3{c}:"]);
    // What the stream carried: turns, and the clock-free commands as themselves.
    let turns = calls(&mut r, "emq.turn");
    assert!(turns > 100, "the replica replayed {turns} turns");
    let served: u64 = info_text(&mut p, "emq", "emq_claims").unwrap().parse().unwrap();
    assert_eq!(turns, served, "one turn per served claim");
    for name in ["emq.enqueue", "emq.ack", "emq.weight"] {
        assert!(calls(&mut r, name) > 0, "{name} was replicated as itself");
    }
    assert_eq!(calls(&mut r, "lmove"), 0, "no claim was replicated as effects");
}

#[test]
fn a_served_waiter_replicates_as_a_turn() {
    let primary = command_mode();
    let replica = Server::start_with(&[]);
    let mut r = replicate_into(&replica, &primary);
    let mut p = primary.conn();
    let (tx, rx) = mpsc::channel();
    let mut waiter = primary.conn();
    thread::spawn(move || {
        let _ = tx.send(cmd(&mut waiter, &["EMQ.WCLAIM", "w{q}:", "60000", "BLOCK", "0"]));
    });
    wait_for("the worker waits", || {
        info_text(&mut p, "clients", "blocked_clients").as_deref() == Some("1")
    });
    cmd(&mut p, &["EMQ.ENQUEUE", "w{q}:", "a", "1", "job"]);
    let reply = rx.recv_timeout(Duration::from_secs(5)).expect("woken");
    assert_eq!(reply.claim().unwrap().2, ["job"]);
    in_sync(&mut p, &mut r);
    assert_eq!(digest(&mut p), digest(&mut r));
    assert_eq!(calls(&mut r, "emq.turn"), 1);
}

#[test]
fn calls_from_scripts_and_transactions_replicate_too() {
    let primary = command_mode();
    let replica = Server::start_with(&[]);
    let mut r = replicate_into(&replica, &primary);
    let mut p = primary.conn();
    let script = "redis.call('EMQ.ENQUEUE', KEYS[1], 'a', '1', 'x', '2', 'y'); \
                  redis.call('EMQ.WEIGHT', KEYS[1], 'a', '2'); \
                  return redis.call('EMQ.WCLAIM', KEYS[1], '60000')";
    let (lane, _, jobs) = cmd(&mut p, &["EVAL", script, "1", "s{q}:"]).claim().unwrap();
    assert_eq!((lane.as_str(), jobs.len()), ("a", 2));
    let _: Vec<Value> = redis::pipe()
        .atomic()
        .cmd("EMQ.ENQUEUE")
        .arg(&["s{q}:", "b", "3", "z"])
        .cmd("EMQ.CLAIM")
        .arg(&["s{q}:", "60000"])
        .query(&mut p)
        .unwrap();
    in_sync(&mut p, &mut r);
    assert_eq!(digest(&mut p), digest(&mut r));
    assert_eq!(
        calls(&mut r, "emq.turn"),
        2,
        "one turn from the script, one from MULTI"
    );
}

#[test]
fn the_aof_holds_turns_and_replays_them() {
    let server = Server::start_with(&[
        "--appendonly",
        "yes",
        "--appendfsync",
        "always",
        "--emq.replicate",
        "command",
    ]);
    let mut c = server.conn();
    let mut rng = Rng::new(23);
    drive(&mut c, "aof{q}:", &mut rng, 2_000);
    let before = digest(&mut c);
    let aof = aof_text(&server.dir);
    assert!(aof.contains("EMQ.TURN"), "the AOF holds the turns");
    assert!(!aof.contains("LMOVE"), "and no claim's effects");
    let server = server.restart(&["--appendonly", "yes"]);
    assert_eq!(digest(&mut server.conn()), before, "replaying the AOF");
}

#[test]
fn a_replicas_own_aof_records_the_turns_it_replays() {
    let primary = command_mode();
    let replica = Server::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let mut r = replicate_into(&replica, &primary);
    let mut p = primary.conn();
    let mut rng = Rng::new(29);
    drive(&mut p, "ra{q}:", &mut rng, 1_500);
    in_sync(&mut p, &mut r);
    let before = digest(&mut p);
    assert_eq!(digest(&mut r), before);
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut r)
        .unwrap();
    drop(r);
    let replica = replica.restart(&["--appendonly", "yes"]);
    assert_eq!(
        digest(&mut replica.conn()),
        before,
        "the replica's AOF alone rebuilds the keyspace"
    );
}

/// Every AOF file of a server, as text.
fn aof_text(dir: &Path) -> String {
    let mut text = String::new();
    for sub in [dir.to_path_buf(), dir.join("appendonlydir")] {
        for entry in std::fs::read_dir(&sub).into_iter().flatten().flatten() {
            let name = entry.file_name().to_string_lossy().to_string();
            if name.contains(".aof") && !name.ends_with(".manifest") {
                text.push_str(&String::from_utf8_lossy(&std::fs::read(entry.path()).unwrap()));
            }
        }
    }
    text
}

fn resp(commands: &[&[&str]]) -> Vec<u8> {
    let mut out = Vec::new();
    for args in commands {
        out.extend(format!("*{}\r\n", args.len()).bytes());
        for a in *args {
            out.extend(format!("${}\r\n{a}\r\n", a.len()).bytes());
        }
    }
    out
}

#[test]
fn a_turn_that_does_not_fit_the_keyspace_changes_nothing() {
    // An AOF written by hand (an old-style single file, which the server
    // loads as its base): two turns in it do not fit the keyspace at their
    // point (the lane is not the ring's head; too few pending jobs).
    let dir = std::env::temp_dir().join(format!("emq-turn-aof-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let p = "t{q}:";
    std::fs::write(
        dir.join("appendonly.aof"),
        resp(&[
            &["EMQ.ENQUEUE", p, "a", "1", "j1", "2", "j2"],
            &["EMQ.ENQUEUE", p, "b", "3", "k1"],
            &["EMQ.TURN", p, "b", "1000", "1", "0"],
            &["EMQ.TURN", p, "a", "5000", "1", "0"],
            &["EMQ.TURN", p, "b", "6000", "5", "0"],
            &["EMQ.TURN", p, "b", "7000", "1", "1"],
        ]),
    )
    .unwrap();
    let server = Server::launch(true, &["--appendonly", "yes"], Some(dir));
    let mut c = server.conn();
    let leases: Vec<(String, i64)> = redis::cmd("ZRANGE")
        .arg(format!("{p}leases"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(&mut c)
        .unwrap();
    assert_eq!(
        leases,
        [("j1".to_string(), 5000), ("k1".to_string(), 7000)],
        "only the fitting turns leased"
    );
    assert_eq!(ring(&mut c, p), ["a"], "b left the ring at its turn");
    let record = hget(&mut c, &format!("{p}jlease"), "k1");
    assert_eq!(record.as_deref(), Some("3 b"));
    let active: Vec<String> = redis::cmd("HGETALL")
        .arg(format!("{p}gactive"))
        .query(&mut c)
        .unwrap();
    assert_eq!(active, ["a", "1", "b", "1"]);
}

#[test]
fn clients_cannot_call_emq_turn() {
    let server = command_mode();
    let mut c = server.conn();
    cmd(&mut c, &["EMQ.ENQUEUE", "c{q}:", "a", "1", "j1"]);
    let before = digest(&mut c);
    let refused = "ERR EMQ.TURN is internal: it runs only from the replication stream or an AOF load";
    assert_eq!(
        cmd(&mut c, &["EMQ.TURN", "c{q}:", "a", "1000", "1", "0"]).err(),
        Some(refused)
    );
    let in_script = cmd(
        &mut c,
        &[
            "EVAL",
            "return redis.pcall('EMQ.TURN', KEYS[1], 'a', '1000', '1', '0')",
            "1",
            "c{q}:",
        ],
    );
    assert_eq!(in_script.err(), Some(refused));
    let in_multi: Vec<Value> = redis::pipe()
        .atomic()
        .cmd("EMQ.TURN")
        .arg("c{q}:")
        .arg("a")
        .arg("1000")
        .arg("1")
        .arg("0")
        .query(&mut c)
        .unwrap_or_default();
    assert!(
        !matches!(in_multi.first(), Some(Value::Array(_))),
        "refused in MULTI too: {in_multi:?}"
    );
    assert_eq!(digest(&mut c), before, "nothing changed");
}

#[test]
fn the_mode_is_a_config() {
    let server = Server::start();
    let mut c = server.conn();
    let get = |c: &mut redis::Connection| -> Vec<String> {
        redis::cmd("CONFIG")
            .arg("GET")
            .arg("emq.replicate")
            .query(c)
            .unwrap()
    };
    assert_eq!(get(&mut c), ["emq.replicate", "effects"], "the default");
    assert_eq!(
        info_text(&mut c, "emq", "emq_replicate").as_deref(),
        Some("effects")
    );
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("emq.replicate")
        .arg("command")
        .query(&mut c)
        .unwrap();
    assert_eq!(get(&mut c), ["emq.replicate", "command"]);
    assert_eq!(
        info_text(&mut c, "emq", "emq_replicate").as_deref(),
        Some("command")
    );
    let bad: redis::RedisResult<()> = redis::cmd("CONFIG")
        .arg("SET")
        .arg("emq.replicate")
        .arg("sometimes")
        .query(&mut c);
    assert!(bad.is_err(), "an unknown mode is refused");
    assert_eq!(get(&mut c), ["emq.replicate", "command"]);
}
