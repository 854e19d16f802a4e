//! SPEC section 3: bad input gets a clear error and changes nothing. Each
//! case runs on a prepared keyspace (what a claim does with a damaged lane,
//! and ACK/NACK/REAP with a damaged record — skip and drop, not refuse — is
//! in tests/trust.rs); the native command must reply an error
//! that begins with `ERR`/`WRONGTYPE` (and says what was wrong) and leave the
//! digest and every key as they were; the Lua twin must refuse it too.

mod common;

use common::*;

const P: &str = "e{q}:";

/// A small healthy queue: two lanes in the ring, one with a ceiling.
fn healthy(c: &mut redis::Connection) {
    build(
        c,
        P,
        &[
            LaneSpec::new("a", 3).weight(2).limit(5).active(1),
            LaneSpec::new("b", 2),
        ],
        &["a", "b"],
    );
}

/// A server for one test function; each case starts from an empty keyspace.
struct Bench {
    _server: Server,
    c: redis::Connection,
    twins: Twins,
}

impl Bench {
    fn new() -> Bench {
        let server = Server::start();
        let mut c = server.conn();
        let twins = Twins::load(&mut c);
        Bench {
            _server: server,
            c,
            twins,
        }
    }

    /// `setup` runs on an empty keyspace; then `args` must fail with an
    /// error containing `expect`, changing nothing, natively and as a twin.
    fn refused(&mut self, setup: &dyn Fn(&mut redis::Connection), name: &str, args: &[&str], expect: &str) {
        let c = &mut self.c;
        let _: () = redis::cmd("FLUSHALL").query(c).unwrap();
        setup(c);
        let (before, digest_before) = (snapshot(c, P), digest(c));
        let native = Emq {
            flavor: Flavor::Native,
            twins: &self.twins,
        };
        let reply = native.run(c, name, args);
        let err = reply
            .err()
            .unwrap_or_else(|| panic!("{name} {args:?}: expected an error, got {reply:?}"));
        assert!(
            err.starts_with("ERR ") || err.starts_with("WRONGTYPE "),
            "{name} {args:?}: {err}"
        );
        assert!(
            err.contains(expect),
            "{name} {args:?}: {err:?} should say {expect:?}"
        );
        assert_eq!(digest(c), digest_before, "{name} {args:?} changed the dataset");
        assert_eq!(diff(&before, &snapshot(c, P), 0.0), None, "{name} {args:?}");

        // The operator commands have no twin (SPEC section 5).
        if !WITH_SHARED.contains(&name) && !STANDALONE.contains(&name) {
            return;
        }
        let lua = Emq {
            flavor: Flavor::Lua,
            twins: &self.twins,
        };
        let twin = lua.run(c, name, args);
        assert!(
            twin.err().is_some(),
            "the twin of {name} accepted {args:?}: {twin:?}"
        );
    }
}

fn nothing(_: &mut redis::Connection) {}

#[test]
fn every_command_refuses_a_wrong_number_of_arguments() {
    let mut b = Bench::new();
    for (name, args) in [
        ("claim", &[P][..]),
        ("claim", &[P, "1", "2"]),
        ("wclaim", &[]),
        ("wclaim", &[P]),
        ("weight", &[P, "a"]),
        ("weight", &[P, "a", "1", "2"]),
        ("enqueue", &[P, "a", "1"]),
        ("enqueue", &[P, "a", "1", "j", "2"]),
        ("ack", &[P, "1"]),
        ("nack", &[P]),
        ("extend", &[P, "1", "100"]),
        ("reap", &[]),
        ("limit", &[P, "a"]),
        ("pause", &[P, "a", "b"]),
        ("resume", &[P]),
        ("reassign", &[P, "j", "a"]),
        ("lane", &[P, "a", "b"]),
        ("policy", &[P, "max-deliveries"]),
        ("dead", &[]),
        ("revive", &[P]),
        ("queue", &[]),
        ("queue", &[P, "x"]),
        ("lanes", &[P]),
        ("repair", &[P]),
    ] {
        b.refused(&healthy, name, args, "wrong number of arguments");
    }
}

#[test]
fn bad_leases() {
    let mut b = Bench::new();
    for lease in [
        "0",
        "-1",
        "abc",
        "1.5",
        "",
        " 1",
        "+1",
        "01",
        "1099511627777",
        "99999999999999999999",
    ] {
        for name in ["claim", "wclaim"] {
            b.refused(
                &healthy,
                name,
                &[P, lease],
                "lease must be an integer from 1 to 1099511627776",
            );
        }
    }
}

#[test]
fn empty_prefix_and_lane() {
    let mut b = Bench::new();
    b.refused(&nothing, "claim", &["", "100"], "prefix must not be empty");
    b.refused(&nothing, "wclaim", &["", "100"], "prefix must not be empty");
    b.refused(&nothing, "weight", &["", "a", "1"], "prefix must not be empty");
    b.refused(&healthy, "weight", &[P, "", "1"], "lane must not be empty");
}

#[test]
fn bad_weights() {
    let mut b = Bench::new();
    for w in ["0", "-3", "abc", "1.5", "", "9223372036854775808", "1e3"] {
        b.refused(&healthy, "weight", &[P, "a", w], "weight must be an integer >= 1");
    }
}

#[test]
fn wrong_types() {
    let mut b = Bench::new();
    b.refused(&string_at(healthy, "gring"), "claim", &[P, "100"], "WRONGTYPE");
    b.refused(&string_at(healthy, "gring"), "wclaim", &[P, "100"], "WRONGTYPE");
    b.refused(&string_at(healthy, "gweight"), "wclaim", &[P, "100"], "WRONGTYPE");
    b.refused(
        &string_at(healthy, "gweight"),
        "weight",
        &[P, "a", "2"],
        "WRONGTYPE",
    );
    b.refused(&string_at(healthy, "glimit"), "claim", &[P, "100"], "WRONGTYPE");
    b.refused(&string_at(healthy, "gactive"), "wclaim", &[P, "100"], "WRONGTYPE");
    b.refused(&string_at(healthy, "leases"), "wclaim", &[P, "100"], "WRONGTYPE");
    b.refused(&string_at(healthy, "jlease"), "claim", &[P, "100"], "WRONGTYPE");
}

#[test]
fn a_refused_call_leaves_the_server_serving() {
    let server = Server::start();
    let mut c = server.conn();
    healthy(&mut c);
    for bad in [
        &["EMQ.WCLAIM", P, "x"][..],
        &["EMQ.WEIGHT", P, "a\0b", "0"],
        &["EMQ.CLAIM"],
    ] {
        assert!(cmd(&mut c, bad).err().is_some());
    }
    let (lane, _, jobs) = cmd(&mut c, &["EMQ.WCLAIM", P, "100"]).claim().unwrap();
    assert_eq!((lane.as_str(), jobs.len()), ("a", 2));
}

/// `healthy` plus one job leased under token 5000 (long expired).
fn leased(c: &mut redis::Connection) {
    healthy(c);
    let mut pipe = redis::pipe();
    pipe.cmd("ZADD")
        .arg(format!("{P}leases"))
        .arg(5000)
        .arg("ja")
        .ignore();
    pipe.cmd("HSET")
        .arg(format!("{P}jlease"))
        .arg("ja")
        .arg("0.5 a")
        .ignore();
    pipe.query::<()>(c).unwrap();
}

fn also(
    first: fn(&mut redis::Connection),
    key: &'static str,
    field: &'static str,
    value: &'static str,
) -> impl Fn(&mut redis::Connection) {
    move |c| {
        first(c);
        let _: () = redis::cmd("HSET")
            .arg(format!("{P}{key}"))
            .arg(field)
            .arg(value)
            .query(c)
            .unwrap();
    }
}

fn string_at(first: fn(&mut redis::Connection), key: &'static str) -> impl Fn(&mut redis::Connection) {
    move |c| {
        first(c);
        let _: () = redis::cmd("DEL").arg(format!("{P}{key}")).query(c).unwrap();
        let _: () = redis::cmd("SET")
            .arg(format!("{P}{key}"))
            .arg("x")
            .query(c)
            .unwrap();
    }
}

#[test]
fn lifecycle_bad_arguments() {
    let mut b = Bench::new();
    for mint in ["abc", "nan", "", " 1", "1 ", "1,5"] {
        b.refused(
            &healthy,
            "enqueue",
            &[P, "a", "1", "ok", mint, "j"],
            "mint must be a float",
        );
    }
    b.refused(&healthy, "enqueue", &[P, "", "1", "j"], "lane must not be empty");
    b.refused(
        &healthy,
        "enqueue",
        &["", "a", "1", "j"],
        "prefix must not be empty",
    );
    for token in ["x", "1.5", "", "9223372036854775808", "+5"] {
        b.refused(&leased, "ack", &[P, token, "ja"], "token must be an integer");
        b.refused(&leased, "nack", &[P, token, "ja"], "token must be an integer");
        b.refused(
            &leased,
            "extend",
            &[P, token, "100", "ja"],
            "token must be an integer",
        );
    }
    b.refused(
        &leased,
        "extend",
        &[P, "5000", "0", "ja"],
        "lease must be an integer from 1 to 1099511627776",
    );
    for n in ["0", "-1", "x", "1.5"] {
        b.refused(&leased, "reap", &[P, "COUNT", n], "COUNT must be an integer >= 1");
        b.refused(
            &healthy,
            "limit",
            &[P, "a", n],
            "limit must be an integer >= 1 or NONE",
        );
    }
    b.refused(&leased, "reap", &[P, "COUNT"], "syntax error");
    b.refused(&leased, "reap", &[P, "LIMIT", "1"], "syntax error");
    b.refused(&leased, "reap", &[P, "COUNT", "1", "x"], "syntax error");
    b.refused(&healthy, "pause", &[P, ""], "lane must not be empty");
    b.refused(
        &healthy,
        "reassign",
        &[P, "a1", "a", ""],
        "lane must not be empty",
    );
    b.refused(&healthy, "lane", &[P, ""], "lane must not be empty");
}

/// (state, the key made a string, command, arguments)
type WrongTypeCase = (
    fn(&mut redis::Connection),
    &'static str,
    &'static str,
    &'static [&'static str],
);

#[test]
fn lifecycle_wrong_types() {
    let mut b = Bench::new();
    let cases: &[WrongTypeCase] = &[
        (healthy, "g:a:pending", "enqueue", &[P, "a", "1", "j"]),
        (healthy, "jlease", "enqueue", &[P, "a", "1", "j"]),
        (healthy, "gring", "enqueue", &[P, "a", "1", "j"]),
        (healthy, "gpaused", "enqueue", &[P, "a", "1", "j"]),
        (leased, "leases", "ack", &[P, "5000", "ja"]),
        (leased, "jlease", "nack", &[P, "5000", "ja"]),
        (leased, "gactive", "ack", &[P, "5000", "ja"]),
        (leased, "g:a:pending", "nack", &[P, "5000", "ja"]),
        (leased, "leases", "extend", &[P, "5000", "100", "ja"]),
        (leased, "leases", "reap", &[P]),
        (leased, "gring", "reap", &[P]),
        (healthy, "glimit", "limit", &[P, "a", "2"]),
        (healthy, "gpaused", "pause", &[P, "a"]),
        (healthy, "gring", "resume", &[P, "a"]),
        (healthy, "g:b:pending", "reassign", &[P, "a1", "a", "b"]),
        (healthy, "gring", "lane", &[P, "a"]),
        (healthy, "gweight", "lane", &[P, "a"]),
        (healthy, "jdead", "enqueue", &[P, "a", "1", "j"]),
        (healthy, "gpaused", "claim", &[P, "100"]),
        (healthy, "jdead", "wclaim", &[P, "100"]),
    ];
    for (state, key, name, args) in cases {
        b.refused(&string_at(*state, key), name, args, "WRONGTYPE");
    }
}

#[test]
fn lifecycle_corrupt_stored_values() {
    let mut b = Bench::new();
    b.refused(
        &also(leased, "gactive", "a", "x"),
        "nack",
        &[P, "5000", "ja"],
        "active count of lane 'a'",
    );
    b.refused(
        &also(leased, "glimit", "a", "1.5"),
        "reap",
        &[P],
        "limit of lane 'a'",
    );
    b.refused(
        &also(healthy, "glimit", "a", "x"),
        "enqueue",
        &[P, "a", "9", "j"],
        "limit of lane 'a'",
    );
    b.refused(
        &also(healthy, "gactive", "b", "x"),
        "pause",
        &[P, "b"],
        "active count of lane 'b'",
    );
    b.refused(
        &also(healthy, "gweight", "a", "x"),
        "lane",
        &[P, "a"],
        "weight of lane 'a'",
    );
    b.refused(
        &also(healthy, "glimit", "b", "no"),
        "reassign",
        &[P, "a1", "a", "b"],
        "limit of lane 'b'",
    );
}

/// `healthy` plus one dead job `jd` of lane `a` and a policy.
fn with_dead(c: &mut redis::Connection) {
    healthy(c);
    let _: () = redis::cmd("ZADD")
        .arg(format!("{P}dead"))
        .arg(1000)
        .arg("jd")
        .query(c)
        .unwrap();
    hset(c, &format!("{P}jdead"), "jd", "7 a");
    hset(c, &format!("{P}jreturns"), "ja", "2");
    hset(c, &format!("{P}policy"), "max-deliveries", "3");
}

#[test]
fn dead_letter_commands_refuse_bad_input() {
    let mut b = Bench::new();
    for n in ["0", "-1", "x", "1.5", "", "9223372036854775808"] {
        b.refused(
            &with_dead,
            "policy",
            &[P, "max-deliveries", n],
            "max-deliveries must be an integer >= 1 or NONE",
        );
        b.refused(
            &with_dead,
            "dead",
            &[P, "COUNT", n],
            "COUNT must be an integer >= 1",
        );
    }
    b.refused(
        &with_dead,
        "policy",
        &[P, "retries", "3"],
        "the policy setting must be max-deliveries",
    );
    b.refused(&with_dead, "dead", &[P, "COUNT"], "syntax error");
    b.refused(&with_dead, "dead", &[P, "LIMIT", "1"], "syntax error");
    b.refused(
        &nothing,
        "policy",
        &["", "max-deliveries", "3"],
        "prefix must not be empty",
    );
    b.refused(&nothing, "revive", &["", "jd"], "prefix must not be empty");
}

#[test]
fn operator_commands_refuse_bad_input() {
    let mut b = Bench::new();
    for cursor in ["x", "-1", "1.5", ""] {
        b.refused(
            &healthy,
            "lanes",
            &[P, cursor],
            "cursor must be an unsigned integer",
        );
    }
    for n in ["0", "x"] {
        b.refused(
            &healthy,
            "lanes",
            &[P, "0", "COUNT", n],
            "COUNT must be an integer >= 1",
        );
    }
    b.refused(&healthy, "repair", &[P, ""], "lane must not be empty");
    b.refused(&nothing, "queue", &[""], "prefix must not be empty");
}

#[test]
fn dead_letter_keys_of_the_wrong_type() {
    let mut b = Bench::new();
    let cases: &[WrongTypeCase] = &[
        (with_dead, "dead", "dead", &[P]),
        (with_dead, "jdead", "dead", &[P]),
        (with_dead, "dead", "revive", &[P, "jd"]),
        (with_dead, "jdead", "revive", &[P, "jd"]),
        (with_dead, "policy", "policy", &[P, "max-deliveries", "2"]),
        (with_dead, "policy", "queue", &[P]),
        (with_dead, "dead", "queue", &[P]),
        (leased_with_policy, "jreturns", "nack", &[P, "5000", "ja"]),
        (leased_with_policy, "jreturns", "ack", &[P, "5000", "ja"]),
        (leased_with_policy, "policy", "nack", &[P, "5000", "ja"]),
        (leased_with_policy, "dead", "reap", &[P]),
        (leased_with_policy, "jdead", "reap", &[P]),
    ];
    for (state, key, name, args) in cases {
        b.refused(&string_at(*state, key), name, args, "WRONGTYPE");
    }
}

/// `leased` with `max-deliveries 1`: its NACK or REAP would kill `ja`.
fn leased_with_policy(c: &mut redis::Connection) {
    leased(c);
    hset(c, &format!("{P}policy"), "max-deliveries", "1");
    hset(c, &format!("{P}jreturns"), "ja", "0");
}

#[test]
fn damaged_stored_settings_are_refused_by_what_reads_them() {
    let mut b = Bench::new();
    b.refused(
        &also(leased, "policy", "max-deliveries", "x"),
        "nack",
        &[P, "5000", "ja"],
        "max-deliveries",
    );
}
