//! Jobs whose time has come: EMQ.REAP (plain, GROUP, MAXSTALLED), a claim's
//! expired-first returns, EMQ.PROMOTE; and poison jobs — the stall policy,
//! EMQ.DEAD, EMQ.REVIVE.

mod support;

use std::time::Duration;

use support::fixtures::{fill, hget, ring, row, served, zscore};
use support::{emq_stat, Conn, Server, Value};

const P: &str = "emq:{q}:";

fn expire_leases(c: &mut Conn, p: &str) {
    let key = format!("{p}active");
    for job in c.ok(&["ZRANGE", &key, "0", "-1"]).texts() {
        c.ok(&["ZADD", &key, "1", &job]);
    }
}

#[test]
fn reap_returns_expired_leases_earliest_first_as_the_script_does() {
    let s = Server::start_with(&["--emq.reap-on-claim", "0"]);
    let mut c = s.conn();
    fill(&mut c, P, "a", 3);
    c.ok(&["EMQ.WEIGHT", P, "a", "3"]);
    let jobs = served(&c.ok(&["EMQ.WCLAIM", P, "60000"]));
    let key = format!("{P}active");
    for (i, j) in jobs.iter().enumerate() {
        c.ok(&["ZADD", &key, &(30 - i).to_string(), &j.0]);
    }
    assert_eq!(c.int(&["EMQ.REAP", P, "COUNT", "2"]), 2, "at most COUNT");
    assert_eq!(
        c.ok(&["ZRANGE", &key, "0", "-1"]).texts(),
        [jobs[0].0.clone()],
        "the earliest went first"
    );
    assert_eq!(row(&mut c, P, &jobs[2].0, "state").as_deref(), Some("pending"));
    assert_eq!(zscore(&mut c, &format!("{P}g:a:pending"), &jobs[2].0), Some(0));
    assert_eq!(hget(&mut c, &format!("{P}gactive"), "a").as_deref(), Some("1"));
    assert_eq!(ring(&mut c, P), ["a"], "rung back");
    assert_eq!(
        row(&mut c, P, &jobs[2].0, "stalled"),
        None,
        "a plain reap counts no stall"
    );
    assert_eq!(c.int(&["EMQ.REAP", P]), 1);
    assert_eq!(c.int(&["EMQ.REAP", P]), 0);
}

#[test]
fn reap_group_takes_only_that_lanes_leases() {
    let s = Server::start_with(&["--emq.reap-on-claim", "0"]);
    let mut c = s.conn();
    fill(&mut c, P, "a", 1);
    fill(&mut c, P, "b", 1);
    c.ok(&["EMQ.CLAIM", P, "60000"]);
    c.ok(&["EMQ.CLAIM", P, "60000"]);
    expire_leases(&mut c, P);
    assert_eq!(c.int(&["EMQ.REAP", P, "GROUP", "b"]), 1);
    assert_eq!(
        c.ok(&["ZRANGE", &format!("{P}active"), "0", "-1"]).texts(),
        ["JOB-a-00001"],
        "a's stays"
    );
    assert_eq!(ring(&mut c, P), ["b"]);
}

#[test]
fn maxstalled_counts_stalls_and_kills_at_the_threshold() {
    let s = Server::start_with(&["--emq.reap-on-claim", "0"]);
    let mut c = s.conn();
    fill(&mut c, P, "a", 2);
    c.ok(&["EMQ.WEIGHT", P, "a", "2"]);
    c.ok(&["EMQ.WCLAIM", P, "60000"]);
    c.ok(&["HSET", &format!("{P}job:JOB-a-00002"), "stalled", "1"]);
    expire_leases(&mut c, P);
    let lists = c.ok(&["EMQ.REAP", P, "MAXSTALLED", "2"]);
    assert_eq!(lists.items()[0].texts(), ["JOB-a-00001"], "returned");
    assert_eq!(lists.items()[1].texts(), ["JOB-a-00002"], "dead of its stalls");
    assert_eq!(row(&mut c, P, "JOB-a-00001", "stalled").as_deref(), Some("1"));
    assert_eq!(row(&mut c, P, "JOB-a-00002", "state").as_deref(), Some("dead"));
    assert_eq!(
        row(&mut c, P, "JOB-a-00002", "last_error").as_deref(),
        Some("stalled")
    );
    assert_eq!(
        hget(&mut c, &format!("{P}metrics:failed"), "count").as_deref(),
        Some("1")
    );
    assert_eq!(
        hget(&mut c, &format!("{P}gactive"), "a"),
        None,
        "both leases ended"
    );
}

#[test]
fn a_death_by_stall_rings_its_lane_where_the_sweep_does_not() {
    let s = Server::start_with(&["--emq.reap-on-claim", "0"]);
    let mut c = s.conn();
    c.ok(&["EMQ.LIMIT", P, "a", "1"]);
    fill(&mut c, P, "a", 2);
    c.ok(&["EMQ.CLAIM", P, "60000"]);
    assert!(ring(&mut c, P).is_empty(), "at its ceiling");
    expire_leases(&mut c, P);
    let lists = c.ok(&["EMQ.REAP", P, "MAXSTALLED", "1"]);
    assert_eq!(lists.items()[1].texts(), ["JOB-a-00001"]);
    assert_eq!(
        ring(&mut c, P),
        ["a"],
        "the death freed the ceiling: the lane is rung"
    );
}

#[test]
fn a_claim_returns_expired_leases_first_counting_stalls() {
    let s = Server::start();
    let mut c = s.conn();
    fill(&mut c, P, "a", 1);
    c.ok(&["EMQ.CLAIM", P, "60000"]);
    expire_leases(&mut c, P);
    let again = served(&c.ok(&["EMQ.CLAIM", P, "60000"]));
    assert_eq!(
        (again[0].0.as_str(), again[0].2),
        ("JOB-a-00001", 2),
        "returned, then claimed again"
    );
    assert_eq!(row(&mut c, P, "JOB-a-00001", "stalled").as_deref(), Some("1"));
    assert_eq!(emq_stat(&mut c, "jobs_reaped_by_claims"), 1);
}

#[test]
fn a_stored_policy_makes_every_return_count_and_kill() {
    let s = Server::start_with(&["--emq.reap-on-claim", "0"]);
    let mut c = s.conn();
    assert_eq!(
        c.ok(&["EMQ.POLICY", P, "max-stalled", "2"]),
        Value::Simple("OK".into())
    );
    assert_eq!(
        hget(&mut c, &format!("{P}meta"), "max-stalled").as_deref(),
        Some("2")
    );
    fill(&mut c, P, "a", 1);
    for round in 1..=2 {
        c.ok(&["EMQ.CLAIM", P, "60000"]);
        expire_leases(&mut c, P);
        assert_eq!(c.int(&["EMQ.REAP", P]), 1, "round {round}");
    }
    assert_eq!(
        row(&mut c, P, "JOB-a-00001", "state").as_deref(),
        Some("dead"),
        "the second stall killed it"
    );
    let dead = c.ok(&["EMQ.DEAD", P]);
    assert_eq!(
        dead,
        Value::Array(vec![Value::Array(vec![
            Value::Bulk(b"JOB-a-00001".to_vec()),
            Value::Bulk(b"a".to_vec()),
            Value::Bulk(b"stalled".to_vec()),
        ])])
    );
    assert_eq!(
        c.ok(&["EMQ.POLICY", P, "max-stalled", "NONE"]),
        Value::Simple("OK".into())
    );
    assert_eq!(c.int(&["EXISTS", &format!("{P}meta")]), 0);
}

#[test]
fn revive_puts_dead_jobs_back_with_their_attempts() {
    let s = Server::start();
    let mut c = s.conn();
    fill(&mut c, P, "a", 1);
    let j = served(&c.ok(&["EMQ.CLAIM", P, "60000"]))[0].clone();
    c.ok(&["EMQ.RETRY", P, &j.0, "1", "0", "1", "bad"]);
    assert!(ring(&mut c, P).is_empty());
    assert_eq!(c.int(&["EMQ.REVIVE", P, &j.0, &j.0, "JOB-none"]), 1);
    assert_eq!(row(&mut c, P, &j.0, "state").as_deref(), Some("pending"));
    assert_eq!(row(&mut c, P, &j.0, "last_error"), None);
    assert_eq!(row(&mut c, P, &j.0, "attempts").as_deref(), Some("1"));
    assert_eq!(ring(&mut c, P), ["a"]);
    assert_eq!(c.int(&["EXISTS", &format!("{P}dead")]), 0);
    assert_eq!(served(&c.ok(&["EMQ.CLAIM", P, "60000"]))[0].2, 2);
}

#[test]
fn promote_moves_due_jobs_back_and_leaves_the_rest() {
    let s = Server::start();
    let mut c = s.conn();
    fill(&mut c, P, "a", 2);
    c.ok(&["EMQ.WEIGHT", P, "a", "2"]);
    let jobs = served(&c.ok(&["EMQ.WCLAIM", P, "60000"]));
    c.ok(&["EMQ.RETRY", P, &jobs[0].0, "1", "0", "5", "e"]);
    c.ok(&["EMQ.RETRY", P, &jobs[1].0, "1", "600000", "5", "e"]);
    std::thread::sleep(Duration::from_millis(5));
    assert_eq!(c.int(&["EMQ.PROMOTE", P]), 1);
    assert_eq!(row(&mut c, P, &jobs[0].0, "state").as_deref(), Some("pending"));
    assert_eq!(row(&mut c, P, &jobs[1].0, "state").as_deref(), Some("scheduled"));
    assert_eq!(ring(&mut c, P), ["a"]);
    assert_eq!(c.int(&["EMQ.PROMOTE", P, "COUNT", "5"]), 0);
}
