//! Bad input: every error of docs/commands.md and docs/damage.md, worded,
//! and each refused call changes nothing.

mod support;

use support::fixtures::{fill, hset, served};
use support::replication::digest;
use support::{Conn, Server};

const P: &str = "e{q}:";

/// A queue with a bit of everything: lanes, a lease, a delayed and a dead job.
fn healthy(c: &mut Conn) -> (String, String) {
    fill(c, P, "a", 3);
    fill(c, P, "b", 1);
    let j = served(&c.ok(&["EMQ.CLAIM", P, "60000"]))[0].clone();
    let k = served(&c.ok(&["EMQ.CLAIM", P, "60000"]))[0].clone();
    c.ok(&["EMQ.RETRY", P, &k.0, "1", "600000", "5", "later"]);
    (j.0, j.2.to_string())
}

/// `args` is refused with exactly `expect`, and nothing changed.
fn refused(c: &mut Conn, args: &[&str], expect: &str) {
    let before = digest(c);
    let got = c
        .cmd(args)
        .err()
        .unwrap_or_else(|| panic!("{args:?} was accepted"));
    assert_eq!(got, expect, "{args:?}");
    assert_eq!(digest(c), before, "{args:?} changed the dataset");
}

#[test]
fn every_command_refuses_a_wrong_number_of_arguments() {
    let s = Server::start();
    let mut c = s.conn();
    healthy(&mut c);
    let cases: &[&[&str]] = &[
        &["EMQ.CLAIM", P],
        &["EMQ.BCLAIM"],
        &["EMQ.ENQUEUE", P, "a", "JOBx"],
        &["EMQ.ENQUEUE", P, "a", "JOBx", "p", "JOBy"],
        &["EMQ.WEIGHT", P, "a"],
        &["EMQ.PAUSE", P],
        &["EMQ.RESUME", P, "a", "b"],
        &["EMQ.LIMIT", P, "a"],
        &["EMQ.REASSIGN", P, "j"],
        &["EMQ.DRAIN", P],
        &["EMQ.COMPLETE", P, "j"],
        &["EMQ.RETRY", P, "j", "1", "0", "1"],
        &["EMQ.DELAY", P, "j", "1", "IN"],
        &["EMQ.EXTEND", P, "j", "1"],
        &["EMQ.REAP"],
        &["EMQ.PROMOTE"],
        &["EMQ.QPAUSE"],
        &["EMQ.QRESUME", P, "x"],
        &["EMQ.POLICY", P, "max-stalled"],
        &["EMQ.DEAD"],
        &["EMQ.REVIVE", P],
        &["EMQ.LANE", P],
        &["EMQ.QUEUE"],
        &["EMQ.LANES", P],
        &["EMQ.REPAIR", P],
    ];
    for args in cases {
        let name = args[0].to_lowercase();
        refused(
            &mut c,
            args,
            &format!("ERR wrong number of arguments for '{name}' command"),
        );
    }
}

#[test]
fn bad_values_are_named() {
    let s = Server::start();
    let mut c = s.conn();
    let (job, token) = healthy(&mut c);
    let lease = "ERR lease must be an integer from 1 to 1099511627776";
    for bad in ["0", "-1", "x", "1.5", "1099511627777", ""] {
        refused(&mut c, &["EMQ.WCLAIM", P, bad], lease);
        refused(&mut c, &["EMQ.EXTEND", P, &job, &token, bad], lease);
    }
    refused(
        &mut c,
        &["EMQ.CLAIM", "", "1"],
        "ERR the prefix must not be empty",
    );
    refused(
        &mut c,
        &["EMQ.ENQUEUE", P, "", "JOBx", "p"],
        "ERR the lane must not be empty",
    );
    refused(
        &mut c,
        &["EMQ.REASSIGN", P, &job, ""],
        "ERR the lane must not be empty",
    );
    for bad in ["0", "-2", "x", "1.0"] {
        refused(
            &mut c,
            &["EMQ.WEIGHT", P, "a", bad],
            "ERR weight must be an integer >= 1",
        );
        refused(
            &mut c,
            &["EMQ.LIMIT", P, "a", bad],
            "ERR limit must be an integer >= 1 or NONE",
        );
        refused(
            &mut c,
            &["EMQ.POLICY", P, "max-stalled", bad],
            "ERR max-stalled must be an integer >= 1 or NONE",
        );
    }
    refused(
        &mut c,
        &["EMQ.POLICY", P, "max-deliveries", "3"],
        "ERR the policy setting must be max-stalled or fairness",
    );
    let delay = "ERR delay must be an integer from 0 to 1099511627776";
    refused(&mut c, &["EMQ.RETRY", P, &job, &token, "-1", "3", "e"], delay);
    refused(&mut c, &["EMQ.RETRY", P, &job, &token, "x", "3", "e"], delay);
    refused(
        &mut c,
        &["EMQ.RETRY", P, &job, &token, "0", "-1", "e"],
        "ERR max must be an integer >= 0",
    );
    refused(
        &mut c,
        &["EMQ.DELAY", P, &job, &token, "IN", "-5"],
        "ERR IN must be an integer from 0 to 1099511627776",
    );
    refused(
        &mut c,
        &["EMQ.DELAY", P, &job, &token, "AT", "x"],
        "ERR AT must be an integer from 0 to 9007199254740992",
    );
    refused(
        &mut c,
        &["EMQ.DELAY", P, &job, &token, "SOON", "5"],
        "ERR syntax error",
    );
    for args in [
        &["EMQ.REAP", P, "COUNT", "0"][..],
        &["EMQ.PROMOTE", P, "COUNT", "x"],
        &["EMQ.DEAD", P, "COUNT", "-1"],
        &["EMQ.LANES", P, "0", "COUNT", "0"],
    ] {
        refused(&mut c, args, "ERR COUNT must be an integer >= 1");
    }
    refused(
        &mut c,
        &["EMQ.REAP", P, "GROUP", "a", "MAXSTALLED", "2"],
        "ERR syntax error",
    );
    refused(
        &mut c,
        &["EMQ.REAP", P, "COUNT", "2", "GROUP", "a"],
        "ERR syntax error",
    );
    refused(
        &mut c,
        &["EMQ.REAP", P, "MAXSTALLED", "0"],
        "ERR MAXSTALLED must be an integer >= 1",
    );
    refused(
        &mut c,
        &["EMQ.LANES", P, "-1"],
        "ERR cursor must be an unsigned integer",
    );
    refused(
        &mut c,
        &["EMQ.REPAIR", P, "LANES", "3", "a", "b"],
        "ERR numlanes must be an integer from 1 to the number of lanes that follow",
    );
    refused(&mut c, &["EMQ.REPAIR", P, "a", "NOW"], "ERR syntax error");
    // Past a command's minimum, a word its grammar has no place for is a
    // syntax error, as for the server's own (`SET k v EX`).
    for args in [
        &["EMQ.CLAIM", P, "1", "BLOCK"][..],
        &["EMQ.CLAIM", P, "10", "FOO"],
        &["EMQ.WCLAIM", P, "1", "BLOCK", "1", "x"],
        &["EMQ.BCLAIM", P, "1", "BLOCK", "1", "BLOCK", "1"],
        &["EMQ.PAUSE", P, "a", "FOR", "1", "X"],
        &["EMQ.RATE", P, "a", "1", "1000", "BURST", "2", "X"],
        &["EMQ.DEAD", P, "COUNT", "1", "X"],
        &["EMQ.LANES", P, "0", "COUNT", "1", "X"],
        &["EMQ.PROMOTE", P, "COUNT", "1", "X"],
    ] {
        refused(&mut c, args, "ERR syntax error");
    }
    refused(
        &mut c,
        &["EMQ.TURN", P, "a", "1", "1", "0"],
        "ERR EMQ.TURN is internal: it runs only from the replication stream or an AOF load",
    );
}

#[test]
fn echomqs_own_errors_word_for_word() {
    let s = Server::start();
    let mut c = s.conn();
    let (job, token) = healthy(&mut c);
    refused(
        &mut c,
        &["EMQ.ENQUEUE", P, "a", "JOBn", "x", "bad", "y"],
        "EMQKIND job id must be JOB-namespaced",
    );
    refused(
        &mut c,
        &["EMQ.DELAY", P, "bad", "1", "IN", "1"],
        "EMQKIND job id must be JOB-namespaced",
    );
    refused(
        &mut c,
        &["EMQ.COMPLETE", P, &job, "99"],
        "EMQSTALE complete token mismatch",
    );
    refused(
        &mut c,
        &["EMQ.RETRY", P, &job, "99", "0", "1", "e"],
        "EMQSTALE retry token mismatch",
    );
    refused(
        &mut c,
        &["EMQ.RETRY", P, "JOBnone", "1", "0", "1", "e"],
        "EMQSTALE job gone",
    );
    refused(
        &mut c,
        &["EMQ.DELAY", P, &job, "99", "IN", "1"],
        "EMQSTALE delay token mismatch",
    );
    refused(
        &mut c,
        &["EMQ.DELAY", P, "JOBnone", "1", "IN", "1"],
        "EMQSTALE job gone",
    );
    refused(
        &mut c,
        &["EMQ.EXTEND", P, &job, "99", "1"],
        "EMQSTALE extend token mismatch",
    );
    let _ = token;
}

#[test]
fn keys_of_the_wrong_type_and_damaged_numbers_are_refused() {
    let s = Server::start();
    let mut c = s.conn();
    let (job, token) = healthy(&mut c);
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    for (key, commands) in [
        (
            "ring",
            vec![
                vec!["EMQ.ENQUEUE", P, "a", "JOBn", "x"],
                vec!["EMQ.PAUSE", P, "a"],
                vec!["EMQ.QUEUE", P],
            ],
        ),
        (
            "active",
            vec![
                vec!["EMQ.COMPLETE", P, job.as_str(), token.as_str()],
                vec!["EMQ.REAP", P],
                vec!["EMQ.EXTEND", P, job.as_str(), token.as_str(), "1"],
            ],
        ),
        ("schedule", vec![vec!["EMQ.PROMOTE", P]]),
        (
            "paused",
            vec![vec!["EMQ.RESUME", P, "a"], vec!["EMQ.CLAIM", P, "1"]],
        ),
        (
            "meta",
            vec![vec!["EMQ.QPAUSE", P], vec!["EMQ.POLICY", P, "max-stalled", "2"]],
        ),
    ] {
        let name = format!("{P}{key}");
        let saved = c.ok(&["DUMP", &name]);
        c.ok(&["DEL", &name]);
        c.ok(&["SET", &name, "oops"]);
        for args in &commands {
            refused(&mut c, args, wrongtype);
        }
        c.ok(&["DEL", &name]);
        if let support::Value::Bulk(b) = saved {
            c.call(&[b"RESTORE", name.as_bytes(), b"0", &b]).unwrap();
        }
    }
    c.ok(&["SET", &format!("{P}job:JOBrow"), "x"]);
    refused(&mut c, &["EMQ.COMPLETE", P, "JOBrow", "1"], wrongtype);
    hset(&mut c, &format!("{P}glimit"), "a", "abc");
    let limit = format!("ERR limit of lane 'a' in '{P}glimit' is not an integer");
    refused(&mut c, &["EMQ.ENQUEUE", P, "a", "JOBn", "x"], &limit);
    refused(&mut c, &["EMQ.COMPLETE", P, &job, &token], &limit);
    refused(&mut c, &["EMQ.RESUME", P, "a"], &limit);
    hset(&mut c, &format!("{P}glimit"), "a", "5");
    hset(&mut c, &format!("{P}meta"), "max-stalled", "x");
    refused(
        &mut c,
        &["EMQ.REAP", P],
        &format!("ERR setting 'max-stalled' in '{P}meta' is not an integer >= 1"),
    );
    hset(&mut c, &format!("{P}metrics:completed"), "count", "lots");
    refused(
        &mut c,
        &["EMQ.COMPLETE", P, &job, &token],
        &format!("ERR count 'count' in '{P}metrics:completed' is not an integer"),
    );
    // A raise past the largest integer: refused whole, where the script's
    // HINCRBY fails after its first writes.
    hset(
        &mut c,
        &format!("{P}metrics:completed"),
        "count",
        "9223372036854775807",
    );
    refused(
        &mut c,
        &["EMQ.COMPLETE", P, &job, &token],
        &format!("ERR count 'count' in '{P}metrics:completed' would overflow"),
    );
    hset(&mut c, &format!("{P}metrics:completed"), "count", "0");
    hset(
        &mut c,
        &format!("{P}metrics:failed"),
        "count",
        "9223372036854775807",
    );
    refused(
        &mut c,
        &["EMQ.RETRY", P, &job, &token, "0", "1", "boom"],
        &format!("ERR count 'count' in '{P}metrics:failed' would overflow"),
    );
    hset(&mut c, &format!("{P}metrics:failed"), "count", "0");
    hset(&mut c, &format!("{P}job:{job}"), "attempts", "x");
    refused(
        &mut c,
        &["EMQ.RETRY", P, &job, "x", "0", "1", "e"],
        &format!("ERR attempts of job '{job}' in '{P}job:{job}' is not an integer"),
    );
}

#[test]
fn a_refused_call_leaves_the_server_serving() {
    let s = Server::start();
    let mut c = s.conn();
    healthy(&mut c);
    let _ = c.cmd(&["EMQ.WCLAIM", P, "0"]);
    assert_eq!(served(&c.ok(&["EMQ.WCLAIM", P, "60000"])).len(), 1);
}
