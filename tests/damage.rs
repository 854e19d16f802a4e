//! Damage from outside (docs/damage.md): a damaged lane is skipped and never
//! stops another; strays are not leased and no job is lost; damage to a
//! queue-wide key is an error that changes nothing.

mod support;

use support::fixtures::{fill, hget, hset, ring, row, served, zscore};
use support::replication::{digest, in_sync, replicate_into};
use support::{emq_stat, Conn, Server, Value};

const P: &str = "d{q}:";

fn serve_all(c: &mut Conn, n: usize) -> Vec<String> {
    (0..n)
        .flat_map(|_| served(&c.ok(&["EMQ.WCLAIM", P, "60000"])))
        .map(|j| j.0)
        .collect()
}

#[test]
fn one_damaged_lane_never_stops_the_others() {
    type Damage = fn(&mut Conn);
    let damages: [(&str, Damage); 6] = [
        ("a weight of 2.5", |c| hset(c, &format!("{P}gweight"), "A", "2.5")),
        ("a ceiling of abc", |c| hset(c, &format!("{P}glimit"), "A", "abc")),
        ("an active count of x", |c| {
            hset(c, &format!("{P}gactive"), "A", "x")
        }),
        ("a negative active count", |c| {
            hset(c, &format!("{P}gactive"), "A", "-2")
        }),
        ("a pending key of another type", |c| {
            c.ok(&["DEL", &format!("{P}g:A:pending")]);
            c.ok(&["SET", &format!("{P}g:A:pending"), "x"]);
        }),
        ("a head whose attempts is no number", |c| {
            hset(c, &format!("{P}job:JOB-A-00001"), "attempts", "x")
        }),
    ];
    for (what, damage) in damages {
        let server = Server::start();
        let mut c = server.conn();
        fill(&mut c, P, "A", 2);
        fill(&mut c, P, "B", 2);
        damage(&mut c);
        let got = serve_all(&mut c, 4);
        assert_eq!(got, ["JOB-B-00001", "JOB-B-00002"], "{what}: B served, A skipped");
        assert!(
            ring(&mut c, P).contains(&"A".to_string()),
            "{what}: A stays in the ring, untouched"
        );
        assert!(emq_stat(&mut c, "lanes_skipped") >= 2, "{what}: counted");
        assert!(server.log().contains("lane 'A' skipped"), "{what}: logged");
    }
}

/// In `command` mode a replica with the module replays a turn and meets the
/// damage again: the primary logged it, so the replica stays quiet.
#[test]
fn damage_is_logged_by_the_primary_and_not_again_by_its_replica() {
    let primary = Server::start_with(&["--emq.replicate", "command"]);
    let replica = Server::start();
    let mut r = replicate_into(&replica, &primary);
    let mut p = primary.conn();
    fill(&mut p, P, "A", 2);
    // A head whose row is not the lane's: a stray, met again by the replay.
    hset(&mut p, &format!("{P}job:JOB-A-00001"), "group", "Z");
    assert_eq!(serve_all(&mut p, 1), ["JOB-A-00002"]);
    in_sync(&mut p, &mut r);
    assert_eq!(digest(&mut p), digest(&mut r), "the replica followed");
    assert!(primary.log().contains("not leased"), "the primary logged it");
    assert!(
        !replica.log().contains("not leased"),
        "the replica did not log it again"
    );
}

#[test]
fn a_job_in_two_lanes_is_leased_once_and_its_copy_dropped() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "A", 1);
    // The same id, pending in B too, by hand.
    c.ok(&[
        "ZADD",
        &format!("{P}g:B:pending"),
        "0",
        "JOB-A-00001",
        "0",
        "JOB-B-1",
    ]);
    c.ok(&[
        "HSET",
        &format!("{P}job:JOB-B-1"),
        "state",
        "pending",
        "attempts",
        "0",
        "group",
        "B",
    ]);
    c.ok(&["RPUSH", &format!("{P}ring"), "B"]);
    let first = served(&c.ok(&["EMQ.CLAIM", P, "60000"]));
    assert_eq!(first[0].0, "JOB-A-00001");
    let second = served(&c.ok(&["EMQ.CLAIM", P, "60000"]));
    assert_eq!(second[0].0, "JOB-B-1", "the leased copy is passed over");
    assert_eq!(
        c.int(&["EXISTS", &format!("{P}g:B:pending")]),
        0,
        "and removed from B"
    );
    assert_eq!(
        row(&mut c, P, "JOB-A-00001", "attempts").as_deref(),
        Some("1"),
        "leased once"
    );
    assert_eq!(emq_stat(&mut c, "strays"), 1);
}

#[test]
fn a_stray_goes_where_its_row_says_and_no_job_is_lost() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "A", 1);
    // Behind A's head: a job whose row names lane C, a flat one, one with no row.
    for (job, group) in [("JOB-c", Some("C")), ("JOB-f", None)] {
        c.ok(&[
            "HSET",
            &format!("{P}job:{job}"),
            "state",
            "pending",
            "attempts",
            "0",
        ]);
        if let Some(g) = group {
            c.ok(&["HSET", &format!("{P}job:{job}"), "group", g]);
        }
    }
    c.ok(&[
        "ZADD",
        &format!("{P}g:A:pending"),
        "0",
        "JOB-0-norow",
        "0",
        "JOB-c",
        "0",
        "JOB-f",
    ]);
    c.ok(&["EMQ.WEIGHT", P, "A", "5"]);
    let got = served(&c.ok(&["EMQ.WCLAIM", P, "60000"]));
    assert_eq!(
        got.iter().map(|j| j.0.as_str()).collect::<Vec<_>>(),
        ["JOB-A-00001"],
        "only A's own job leased"
    );
    assert_eq!(
        zscore(&mut c, &format!("{P}g:C:pending"), "JOB-c"),
        Some(0),
        "to its lane"
    );
    assert_eq!(ring(&mut c, P), ["C"], "which joined the ring");
    assert_eq!(
        zscore(&mut c, &format!("{P}pending"), "JOB-f"),
        Some(0),
        "a flat job to the flat queue"
    );
    assert_eq!(
        c.int(&["EXISTS", &format!("{P}job:JOB-0-norow")]),
        0,
        "no ghost row written"
    );
    assert_eq!(c.int(&["EXISTS", &format!("{P}g:A:pending")]), 0);
}

#[test]
fn a_damaged_lanes_expired_jobs_go_back_on_a_claim_and_fail_a_reap() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "A", 2);
    fill(&mut c, P, "B", 1);
    c.ok(&["EMQ.CLAIM", P, "60000"]);
    c.ok(&["ZADD", &format!("{P}active"), "1", "JOB-A-00001"]);
    hset(&mut c, &format!("{P}glimit"), "A", "abc");
    let before = digest(&mut c);
    let e = c.cmd(&["EMQ.REAP", P]).unwrap_err();
    assert_eq!(
        e,
        format!("ERR limit of lane 'A' in '{P}glimit' is not an integer")
    );
    assert_eq!(digest(&mut c), before, "an error changed nothing");
    // A claim's own returns put the job back all the same.
    let got = served(&c.ok(&["EMQ.CLAIM", P, "60000"]));
    assert_eq!(got[0].0, "JOB-B-00001");
    assert_eq!(row(&mut c, P, "JOB-A-00001", "state").as_deref(), Some("pending"));
    assert_eq!(
        hget(&mut c, &format!("{P}gactive"), "A"),
        None,
        "its count dropped"
    );
}

#[test]
fn damage_to_a_queue_wide_key_is_an_error_that_changes_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    fill(&mut c, P, "A", 1);
    for key in ["active", "gactive", "ring"] {
        let name = format!("{P}{key}");
        let saved = c.ok(&["DUMP", &name]);
        c.ok(&["DEL", &name]);
        c.ok(&["SET", &name, "oops"]);
        let before = digest(&mut c);
        let e = c.cmd(&["EMQ.CLAIM", P, "60000"]).unwrap_err();
        assert!(e.starts_with("WRONGTYPE"), "{key}: {e}");
        assert_eq!(digest(&mut c), before, "{key}: nothing changed");
        c.ok(&["DEL", &name]);
        if saved != Value::Nil {
            c.call(&[
                b"RESTORE",
                name.as_bytes(),
                b"0",
                &match saved {
                    Value::Bulk(b) => b,
                    _ => unreachable!(),
                },
            ])
            .unwrap();
        }
    }
    assert_eq!(
        served(&c.ok(&["EMQ.CLAIM", P, "60000"])).len(),
        1,
        "mended, it serves"
    );
}
