//! Damage from outside (docs/damage.md): a damaged lane is skipped and never
//! stops another; strays are not leased and no job is lost; damage to a
//! queue-wide key is an error that changes nothing.

mod support;

use support::fixtures::{fill, hset, job_id, ring, row, served, zscore};
use support::invariants::check_invariants;
use support::replication::{digest, in_sync, replicate_into};
use support::snapshot::snapshot;
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

/// `n` jobs of `lane` from index `from`, leased (`where_ = "active"`) or
/// delayed (`"schedule"`) at `score`, as the module leaves them: rows, the
/// entry, and for leases the lane's count.
fn placed(c: &mut Conn, lane: &str, from: usize, n: usize, where_: &str, score: &str) -> Vec<String> {
    let state = if where_ == "active" { "active" } else { "scheduled" };
    let ids: Vec<String> = (from..from + n).map(|i| job_id(lane, i)).collect();
    for chunk in ids.chunks(1000) {
        let mut cmds: Vec<Vec<Vec<u8>>> = Vec::new();
        let mut zadd = vec![b"ZADD".to_vec(), format!("{P}{where_}").into_bytes()];
        for id in chunk {
            cmds.push(
                [
                    "HSET",
                    &format!("{P}job:{id}"),
                    "state",
                    state,
                    "attempts",
                    "1",
                    "payload",
                    "p",
                    "group",
                    lane,
                ]
                .map(|a| a.as_bytes().to_vec())
                .to_vec(),
            );
            zadd.push(score.as_bytes().to_vec());
            zadd.push(id.as_bytes().to_vec());
        }
        cmds.push(zadd);
        for r in c.pipeline(&cmds).unwrap() {
            r.unwrap();
        }
    }
    if where_ == "active" {
        c.ok(&["HINCRBY", &format!("{P}gactive"), lane, &n.to_string()]);
    }
    ids
}

/// What makes lane x damaged for a sweep, and how it is mended.
type Damage = (&'static str, fn(&mut Conn), fn(&mut Conn, usize));

const SWEEP_DAMAGES: [Damage; 2] = [
    (
        "x's pending key of another type",
        |c| {
            c.ok(&["SET", &format!("{P}g:x:pending"), "clobbered"]);
        },
        |c, _| {
            c.ok(&["DEL", &format!("{P}g:x:pending")]);
        },
    ),
    (
        "x's active count not a number",
        |c| hset(c, &format!("{P}gactive"), "x", "many"),
        |c, n| hset(c, &format!("{P}gactive"), "x", &n.to_string()),
    ),
];

/// docs/damage.md, "Sweeps": REAP (plain, MAXSTALLED) and PROMOTE leave a
/// damaged lane's entries in place, count them, and reach the healthy lane's
/// behind them; once mended, x's entries go back into lane x.
#[test]
fn sweeps_pass_over_a_damaged_lanes_entries_to_the_others() {
    for (what, damage, mend) in SWEEP_DAMAGES {
        for ahead in [1, 150] {
            let server = Server::start();
            let mut c = server.conn();
            let x_leased = placed(&mut c, "x", 1, ahead, "active", "1");
            let x_due = placed(&mut c, "x", 1001, ahead, "schedule", "1");
            let y_leased = placed(&mut c, "y", 1, 2, "active", "2");
            let y_due = placed(&mut c, "y", 1001, 1, "schedule", "2");
            damage(&mut c);
            let case = format!("{what}, {ahead} ahead");

            assert_eq!(
                c.int(&["EMQ.REAP", P, "COUNT", "1"]),
                1,
                "{case}: y's first lease back"
            );
            assert_eq!(
                zscore(&mut c, &format!("{P}g:y:pending"), &y_leased[0]),
                Some(0),
                "{case}"
            );
            assert_eq!(
                row(&mut c, P, &y_leased[0], "state").as_deref(),
                Some("pending"),
                "{case}"
            );
            let swept = c.ok(&["EMQ.REAP", P, "MAXSTALLED", "5", "COUNT", "10"]);
            assert_eq!(
                swept.items()[0].texts(),
                [y_leased[1].clone()],
                "{case}: the sweep reaches y"
            );
            assert_eq!(
                c.int(&["EMQ.PROMOTE", P, "COUNT", "10"]),
                1,
                "{case}: y's due job"
            );
            assert_eq!(
                zscore(&mut c, &format!("{P}g:y:pending"), &y_due[0]),
                Some(0),
                "{case}"
            );
            assert_eq!(ring(&mut c, P), ["y"], "{case}: y rung, x not");

            // x's entries stay as they were, and are counted and logged.
            assert_eq!(c.int(&["ZCARD", &format!("{P}active")]), ahead as i64, "{case}");
            assert_eq!(c.int(&["ZCARD", &format!("{P}schedule")]), ahead as i64, "{case}");
            assert_eq!(
                row(&mut c, P, &x_leased[0], "state").as_deref(),
                Some("active"),
                "{case}"
            );
            assert_eq!(
                row(&mut c, P, &x_leased[0], "stalled"),
                None,
                "{case}: no stall counted"
            );
            assert_eq!(emq_stat(&mut c, "entries_kept"), 3 * ahead as u64, "{case}");
            assert!(
                server
                    .log()
                    .contains("stay where they are until mended (lane 'x' first"),
                "{case}"
            );

            mend(&mut c, ahead);
            assert_eq!(
                c.int(&["EMQ.REAP", P, "COUNT", "1000"]),
                ahead as i64,
                "{case}: mended"
            );
            assert_eq!(
                c.int(&["EMQ.PROMOTE", P, "COUNT", "1000"]),
                ahead as i64,
                "{case}"
            );
            assert_eq!(
                c.int(&["ZCARD", &format!("{P}g:x:pending")]),
                2 * ahead as i64,
                "{case}: x's jobs back in lane x"
            );
            assert!(x_due
                .iter()
                .all(|j| row(&mut c, P, j, "state").as_deref() == Some("pending")));
            if let Err(broken) = check_invariants(&snapshot(&mut c, P)) {
                panic!("{case}: {broken}");
            }
        }
    }
}

/// A sweep stops once it has passed over 10,000 damaged entries in a call
/// (its bound on work past COUNT, docs/damage.md): with 9,999 ahead the
/// healthy lane's entry behind them is reached, with 10,000 it is not.
#[test]
fn a_sweep_passes_over_at_most_ten_thousand_damaged_entries() {
    let server = Server::start();
    let mut c = server.conn();
    placed(&mut c, "x", 1, 9_999, "active", "1");
    placed(&mut c, "x", 20_001, 9_999, "schedule", "1");
    let y = placed(&mut c, "y", 1, 1, "active", "2");
    let y_due = placed(&mut c, "y", 20_001, 1, "schedule", "2");
    c.ok(&["SET", &format!("{P}g:x:pending"), "clobbered"]);
    assert_eq!(c.int(&["EMQ.REAP", P]), 1, "9,999 ahead: y reached");
    assert_eq!(c.int(&["EMQ.PROMOTE", P]), 1, "9,999 ahead: y's due job reached");
    assert_eq!(row(&mut c, P, &y[0], "state").as_deref(), Some("pending"));
    assert_eq!(row(&mut c, P, &y_due[0], "state").as_deref(), Some("pending"));
    let kept = emq_stat(&mut c, "entries_kept");
    assert_eq!(kept, 19_998);

    placed(&mut c, "x", 10_000, 1, "active", "1");
    placed(&mut c, "x", 30_000, 1, "schedule", "1");
    let y = placed(&mut c, "y", 2, 1, "active", "2");
    let y_due = placed(&mut c, "y", 20_002, 1, "schedule", "2");
    assert_eq!(
        c.int(&["EMQ.REAP", P]),
        0,
        "10,000 ahead: the bound stops the call"
    );
    assert_eq!(c.int(&["EMQ.PROMOTE", P]), 0);
    assert_eq!(
        emq_stat(&mut c, "entries_kept") - kept,
        20_000,
        "exactly the bound each"
    );
    assert_eq!(row(&mut c, P, &y[0], "state").as_deref(), Some("active"));
    assert_eq!(row(&mut c, P, &y_due[0], "state").as_deref(), Some("scheduled"));
}

/// A queue-wide key of another type is the sweep's error, not one lane's
/// damage, and a refused sweep counts nothing it would have kept.
#[test]
fn a_sweep_refuses_a_queue_wide_key_of_another_type_and_counts_nothing() {
    for key in ["gactive", "glimit"] {
        let server = Server::start();
        let mut c = server.conn();
        placed(&mut c, "a", 1, 1, "active", "1");
        placed(&mut c, "a", 10, 1, "schedule", "1");
        let name = format!("{P}{key}");
        c.ok(&["DEL", &name]);
        c.ok(&["SET", &name, "clobbered"]);
        let before = support::replication::digest(&mut c);
        for cmd in [&["EMQ.REAP", P][..], &["EMQ.PROMOTE", P], &["EMQ.STATS", P, "a"]] {
            let e = c.cmd(cmd).unwrap_err();
            assert!(e.starts_with("WRONGTYPE"), "{key} {cmd:?}: {e}");
        }
        assert_eq!(support::replication::digest(&mut c), before, "{key}");
        assert_eq!(emq_stat(&mut c, "entries_kept"), 0, "{key}");
    }
    // Lane x damaged, then the sweep refused for P metrics:failed: the
    // entry it would have kept is not counted.
    let server = Server::start();
    let mut c = server.conn();
    placed(&mut c, "x", 1, 1, "active", "1");
    hset(&mut c, &format!("{P}gactive"), "x", "many");
    placed(&mut c, "y", 1, 1, "active", "2");
    c.ok(&["SET", &format!("{P}metrics:failed"), "z"]);
    let e = c.cmd(&["EMQ.REAP", P, "MAXSTALLED", "1"]).unwrap_err();
    assert!(e.starts_with("WRONGTYPE"), "{e}");
    assert_eq!(emq_stat(&mut c, "entries_kept"), 0);
}

/// The module's own sweeps keep the same rule: a claim's expired-first
/// returns, the timer's returns and promotions (a waiting worker gets y's job
/// at its time with 1,000 or 5,000 of x's ahead, past the timer's batch of
/// 1,000), and EMQ.REVIVE.
#[test]
fn claims_the_timer_and_revive_pass_over_a_damaged_lanes_entries() {
    let server = Server::start();
    let mut c = server.conn();
    placed(&mut c, "x", 1, 15, "active", "1");
    let y = placed(&mut c, "y", 1, 1, "active", "2");
    c.ok(&["SET", &format!("{P}g:x:pending"), "clobbered"]);
    // A claim stops once it has passed over emq.reap-on-claim (16): past
    // x's 15, y's is returned and served.
    let got = served(&c.ok(&["EMQ.CLAIM", P, "60000"]));
    assert_eq!(got[0].0, y[0], "a claim's returns passed x's and reached y's");
    assert_eq!(
        c.int(&["ZCARD", &format!("{P}active")]),
        16,
        "x's 15 stay, y's leased again"
    );

    // REVIVE: x's dead job stays dead, y's comes back.
    let xd = placed(&mut c, "x", 100, 1, "active", "0");
    let yd = placed(&mut c, "y", 100, 1, "active", "0");
    for j in [&xd[0], &yd[0]] {
        c.ok(&["ZREM", &format!("{P}active"), j]);
        hset(&mut c, &format!("{P}job:{j}"), "state", "dead");
        c.ok(&["ZADD", &format!("{P}dead"), "0", j]);
    }
    c.ok(&["HINCRBY", &format!("{P}gactive"), "y", "-1"]);
    assert_eq!(c.int(&["EMQ.REVIVE", P, &xd[0], &yd[0]]), 1);
    assert_eq!(row(&mut c, P, &xd[0], "state").as_deref(), Some("dead"));
    assert_eq!(row(&mut c, P, &yd[0], "state").as_deref(), Some("pending"));

    for ahead in [1000, 5000] {
        c.ok(&["FLUSHALL"]);
        placed(&mut c, "x", 1, ahead, "schedule", "1");
        placed(&mut c, "x", 10_001, ahead, "active", "1");
        c.ok(&["SET", &format!("{P}g:x:pending"), "clobbered"]);
        let due = (support::fixtures::now_ms(&mut c) + 300).to_string();
        let y = placed(&mut c, "y", 1, 1, "schedule", &due);
        let asked = std::time::Instant::now();
        let got = c.ok(&["EMQ.WCLAIM", P, "60000", "BLOCK", "10000"]);
        let after = asked.elapsed();
        assert_eq!(
            served(&got)[0].0,
            y[0],
            "{ahead} ahead: the timer promoted y's job"
        );
        assert!(
            after < std::time::Duration::from_millis(1800) * support::server::slow(),
            "{ahead} ahead: within the timer's resolution, {after:?}"
        );
    }
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
