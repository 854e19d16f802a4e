//! A job's transitions (COMPLETE, RETRY, DELAY, EXTEND) as EchoMQ's scripts
//! make them — fenced on attempts, for lane jobs and flat jobs alike — and
//! each named difference (docs/damage.md) shown beside its twin.

mod support;

use support::fixtures::{fill, hget, now_ms, ring, row, served, zscore};
use support::twins::Twins;
use support::{Conn, Server, Value};

const P: &str = "emq:{q}:";

/// A lane job claimed: its id and token.
fn claimed(c: &mut Conn, p: &str, lane: &str) -> (String, String) {
    fill(c, p, lane, 1);
    let j = served(&c.ok(&["EMQ.CLAIM", p, "60000"]))[0].clone();
    (j.0, j.2.to_string())
}

/// A flat job (no lane) leased as EchoMQ's own @claim leases it.
fn flat_leased(c: &mut Conn, p: &str, job: &str) {
    c.ok(&[
        "HSET",
        &format!("{p}job:{job}"),
        "state",
        "pending",
        "attempts",
        "0",
        "payload",
        "f",
    ]);
    c.ok(&["ZADD", &format!("{p}pending"), "0", job]);
    c.ok(&[
        "EVAL",
        support::drive::FLAT_CLAIM,
        "2",
        &format!("{p}pending"),
        &format!("{p}active"),
        &format!("{p}job:"),
        "60000",
    ]);
}

#[test]
fn complete_deletes_the_row_frees_the_lane_and_counts() {
    let s = Server::start();
    let mut c = s.conn();
    c.ok(&["EMQ.LIMIT", P, "a", "1"]);
    fill(&mut c, P, "a", 2);
    let j = served(&c.ok(&["EMQ.CLAIM", P, "60000"]))[0].clone();
    assert!(ring(&mut c, P).is_empty(), "at its ceiling");
    assert_eq!(
        c.cmd(&["EMQ.COMPLETE", P, &j.0, "2"]).unwrap_err(),
        "EMQSTALE complete token mismatch"
    );
    let wakes = c.int(&["LLEN", &format!("{P}wake")]);
    assert_eq!(c.int(&["EMQ.COMPLETE", P, &j.0, "1"]), 1);
    assert_eq!(c.int(&["EXISTS", &format!("{P}job:{}", j.0)]), 0);
    assert_eq!(
        hget(&mut c, &format!("{P}gactive"), "a"),
        None,
        "the count removed at 0"
    );
    assert_eq!(ring(&mut c, P), ["a"], "under its ceiling again: rung");
    assert_eq!(c.int(&["LLEN", &format!("{P}wake")]), wakes + 1, "with a wake");
    assert_eq!(
        hget(&mut c, &format!("{P}metrics:completed"), "count").as_deref(),
        Some("1")
    );
    assert_eq!(c.int(&["EMQ.COMPLETE", P, &j.0, "1"]), 0, "no row: 0");
}

#[test]
fn retry_delays_until_max_then_the_job_dies() {
    let s = Server::start();
    let mut c = s.conn();
    let (job, token) = claimed(&mut c, P, "a");
    let now = now_ms(&mut c);
    assert_eq!(
        c.ok(&["EMQ.RETRY", P, &job, &token, "5000", "2", "boom"]).text(),
        "scheduled"
    );
    assert_eq!(row(&mut c, P, &job, "state").as_deref(), Some("scheduled"));
    assert_eq!(row(&mut c, P, &job, "last_error").as_deref(), Some("boom"));
    let due = zscore(&mut c, &format!("{P}schedule"), &job).unwrap();
    assert!((due - now - 5000).abs() < 2000);
    c.ok(&["ZADD", &format!("{P}schedule"), "0", &job]);
    assert_eq!(c.int(&["EMQ.PROMOTE", P]), 1);
    let again = served(&c.ok(&["EMQ.CLAIM", P, "60000"]))[0].clone();
    assert_eq!(
        (again.0.as_str(), again.2),
        (job.as_str(), 2),
        "attempts kept and raised"
    );
    assert_eq!(
        c.ok(&["EMQ.RETRY", P, &job, "2", "0", "2", "again"]).text(),
        "dead"
    );
    assert_eq!(row(&mut c, P, &job, "state").as_deref(), Some("dead"));
    assert_eq!(zscore(&mut c, &format!("{P}dead"), &job), Some(0));
    assert_eq!(
        hget(&mut c, &format!("{P}metrics:failed"), "count").as_deref(),
        Some("1")
    );
    assert_eq!(
        c.cmd(&["EMQ.RETRY", P, "JOB-gone", "1", "0", "1", "x"])
            .unwrap_err(),
        "EMQSTALE job gone"
    );
    assert_eq!(
        c.cmd(&["EMQ.RETRY", P, &job, "9", "0", "1", "x"]).unwrap_err(),
        "EMQSTALE retry token mismatch"
    );
}

#[test]
fn delay_schedules_in_or_at_and_keeps_attempts() {
    let s = Server::start();
    let mut c = s.conn();
    let (job, token) = claimed(&mut c, P, "a");
    assert_eq!(c.int(&["EMQ.DELAY", P, &job, &token, "AT", "12345"]), 1);
    assert_eq!(zscore(&mut c, &format!("{P}schedule"), &job), Some(12345));
    assert_eq!(row(&mut c, P, &job, "attempts").as_deref(), Some("1"));
    assert_eq!(row(&mut c, P, &job, "state").as_deref(), Some("scheduled"));
    let now = now_ms(&mut c);
    assert_eq!(
        c.int(&["EMQ.DELAY", P, &job, &token, "in", "7000"]),
        1,
        "keywords in any case"
    );
    assert!((zscore(&mut c, &format!("{P}schedule"), &job).unwrap() - now - 7000).abs() < 2000);
    assert_eq!(
        c.cmd(&["EMQ.DELAY", P, &job, "5", "IN", "1"]).unwrap_err(),
        "EMQSTALE delay token mismatch"
    );
    assert_eq!(
        c.cmd(&["EMQ.DELAY", P, "JOBx", "1", "IN", "1"]).unwrap_err(),
        "EMQSTALE job gone"
    );
    assert_eq!(
        c.cmd(&["EMQ.DELAY", P, "task", "1", "IN", "1"]).unwrap_err(),
        "EMQKIND job id must be JOB-namespaced"
    );
}

#[test]
fn extend_moves_a_leased_jobs_deadline() {
    let s = Server::start();
    let mut c = s.conn();
    let (job, token) = claimed(&mut c, P, "a");
    let now = now_ms(&mut c);
    assert_eq!(c.int(&["EMQ.EXTEND", P, &job, &token, "900000"]), 1);
    assert!((zscore(&mut c, &format!("{P}active"), &job).unwrap() - now - 900_000).abs() < 2000);
    assert_eq!(
        c.cmd(&["EMQ.EXTEND", P, &job, "3", "1000"]).unwrap_err(),
        "EMQSTALE extend token mismatch"
    );
    assert_eq!(c.int(&["EMQ.EXTEND", P, "JOBnone", "1", "1000"]), -1);
}

#[test]
fn flat_jobs_leave_their_leases_as_lane_jobs_do() {
    let s = Server::start();
    let mut c = s.conn();
    flat_leased(&mut c, P, "JOBf1");
    flat_leased(&mut c, P, "JOBf2");
    assert_eq!(c.int(&["EMQ.COMPLETE", P, "JOBf1", "1"]), 1);
    assert_eq!(
        c.ok(&["EMQ.RETRY", P, "JOBf2", "1", "0", "3", "x"]).text(),
        "scheduled"
    );
    assert_eq!(c.int(&["EMQ.PROMOTE", P]), 1);
    assert_eq!(
        c.ok(&["ZRANGE", &format!("{P}pending"), "0", "-1"]).texts(),
        ["JOBf2"],
        "back to the flat queue"
    );
    assert_eq!(c.int(&["EXISTS", &format!("{P}gactive")]), 0, "no lane counted");
    // A flat job not leased leaves P pending.
    assert_eq!(c.int(&["EMQ.COMPLETE", P, "JOBf2", "1"]), 1);
    assert_eq!(c.int(&["EXISTS", &format!("{P}pending")]), 0);
}

/// The named differences, each beside its twin (docs/damage.md).
struct Pair {
    _s: Server,
    c: Conn,
    twins: Twins,
}

const N: &str = "n{q}:";
const L: &str = "l{q}:";

impl Pair {
    fn new() -> Pair {
        let s = Server::start();
        let mut c = s.conn();
        let twins = Twins::load(&mut c);
        Pair { _s: s, c, twins }
    }

    /// Runs `name args` natively on `N` and as the script on `L`.
    fn both(&mut self, name: &str, args: &[&str]) -> (support::Reply, support::Reply) {
        let mut native = vec![format!("EMQ.{}", name.to_uppercase()), N.to_string()];
        native.extend(args.iter().map(|a| a.to_string()));
        let n = self.c.cmd(&native.iter().map(String::as_str).collect::<Vec<_>>());
        let mut lua: Vec<&[u8]> = vec![L.as_bytes()];
        lua.extend(args.iter().map(|a| a.as_bytes()));
        let l = self.twins.like_native(&mut self.c, name, &lua);
        (n, l)
    }

    /// A setup step both sides must take without an error.
    fn step(&mut self, name: &str, args: &[&str]) {
        let (n, l) = self.both(name, args);
        assert!(
            n.is_ok() && l.is_ok(),
            "{name} {args:?}: native {n:?}, twin {l:?}"
        );
    }
}

#[test]
fn delay_makes_a_lane_job_leave_its_lease_where_the_script_leaks_the_count() {
    let mut t = Pair::new();
    t.step("limit", &["a", "1"]);
    t.step("enqueue", &["a", "JOB1", "x", "JOB2", "y"]);
    t.step("claim", &["60000"]);
    assert_eq!(
        t.both("delay", &["JOB1", "1", "IN", "60000"]),
        (Ok(Value::Int(1)), Ok(Value::Int(1)))
    );
    let c = &mut t.c;
    assert_eq!(
        hget(c, &format!("{N}gactive"), "a"),
        None,
        "native: the lease ended"
    );
    assert_eq!(ring(c, N), ["a"], "native: under its ceiling, rung");
    assert_eq!(
        hget(c, &format!("{L}gactive"), "a").as_deref(),
        Some("1"),
        "script: still counted"
    );
    assert!(
        ring(c, L).is_empty(),
        "script: the lane stays parked at its ceiling"
    );
}

#[test]
fn extend_does_not_lease_a_job_that_is_not_leased() {
    let mut t = Pair::new();
    t.step("enqueue", &["a", "JOB1", "x"]);
    let (n, l) = t.both("extend", &["JOB1", "0", "60000"]);
    assert_eq!((n, l), (Ok(Value::Int(0)), Ok(Value::Int(1))));
    assert_eq!(t.c.int(&["EXISTS", &format!("{N}active")]), 0);
    assert_eq!(
        t.c.int(&["ZCARD", &format!("{L}active")]),
        1,
        "the script leased a pending job"
    );
}

#[test]
fn complete_and_retry_take_a_delayed_or_dead_job_out_of_its_set() {
    let mut t = Pair::new();
    t.step("enqueue", &["a", "JOB1", "x", "JOB2", "y"]);
    t.step("wclaim", &["60000"]);
    t.step("weight", &["a", "2"]);
    t.step("wclaim", &["60000"]);
    t.step("retry", &["JOB1", "1", "600000", "5", "e"]);
    t.step("retry", &["JOB2", "1", "0", "1", "e"]);
    assert_eq!(
        t.both("complete", &["JOB1", "1"]),
        (Ok(Value::Int(1)), Ok(Value::Int(1)))
    );
    assert_eq!(
        t.both("retry", &["JOB2", "1", "600000", "5", "e"])
            .0
            .unwrap()
            .text(),
        "scheduled"
    );
    let c = &mut t.c;
    assert_eq!(c.int(&["EXISTS", &format!("{N}schedule")]), 1);
    assert_eq!(
        c.ok(&["ZRANGE", &format!("{N}schedule"), "0", "-1"]).texts(),
        ["JOB2"],
        "native: the completed job left the schedule"
    );
    assert_eq!(
        c.int(&["EXISTS", &format!("{N}dead")]),
        0,
        "native: the retried dead job left P dead"
    );
    assert_eq!(
        c.ok(&["ZRANGE", &format!("{L}schedule"), "0", "-1"]).texts(),
        ["JOB1", "JOB2"],
        "script: a deleted job's id left behind"
    );
    assert_eq!(
        c.ok(&["ZRANGE", &format!("{L}dead"), "0", "-1"]).texts(),
        ["JOB2"],
        "script: both dead and scheduled"
    );
}
