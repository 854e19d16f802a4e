//! Unit tests of the figures' store: what a turn and a lease's end record,
//! and the bounds.

use super::*;
use crate::model::figures::brand::brand;

const Q: (i32, &[u8]) = (0, b"q{a}:");
const CAP: usize = 100_000;

fn clock(now_ms: i64) -> Clock {
    Clock::new(now_ms, 60_000)
}

fn keep(lanes: usize) -> Keep {
    Keep { lanes, time: false }
}

fn served<'a>(jobs: &'a [Vec<u8>], first: bool) -> Vec<Served<'a>> {
    jobs.iter().map(|j| Served { job: j, first }).collect()
}

#[test]
fn a_turn_counts_for_its_lane_and_its_queue_and_waits_from_the_ids() {
    let mut s = Store::default();
    let now = 1_765_000_000_000;
    let jobs = vec![
        brand(b"JOB", now - 2_000, 1),
        brand(b"JOB", now - 500, 2),
        b"JOB-plain".to_vec(),
    ];
    s.turn(
        Q,
        b"a",
        clock(now),
        Clamp::Weight,
        &served(&jobs, true),
        keep(CAP),
    );
    s.turn(Q, b"b", clock(now), Clamp::Ceiling, &[], keep(CAP));
    // Claimed again (after a retry): no second wait.
    let again = vec![brand(b"JOB", now - 9_000, 3)];
    s.turn(
        Q,
        b"a",
        clock(now),
        Clamp::Depth,
        &served(&again, false),
        keep(CAP),
    );
    let q = s.queue(Q.0, Q.1).unwrap();
    let a = q.lane(b"a").unwrap().window(clock(now));
    assert_eq!((a.turns, a.jobs), (2, 4));
    assert_eq!((a.clamp(Clamp::Weight), a.clamp(Clamp::Depth)), (1, 1));
    assert_eq!(a.waits.count(), 2, "branded first claims only");
    assert_eq!(a.waits.max(), Some(2_000));
    let b = q.lane(b"b").unwrap().window(clock(now));
    assert_eq!((b.turns, b.jobs, b.clamp(Clamp::Ceiling)), (1, 0, 1));
    let all = q.sum(clock(now), true).0;
    assert_eq!((all.turns, all.jobs, all.waits.count()), (3, 4, 2));
    assert_eq!((s.lanes_tracked(), s.leases_tracked()), (2, 4));
}

#[test]
fn a_turns_jobs_use_the_time_since_the_previous_end() {
    let mut s = Store::default();
    let jobs: Vec<Vec<u8>> = (0..3).map(|i| format!("JOB-{i}").into_bytes()).collect();
    s.turn(
        Q,
        b"a",
        clock(1_000),
        Clamp::Weight,
        &served(&jobs, true),
        keep(CAP),
    );
    assert_eq!(
        s.lease_ended(Q, b"a", b"JOB-0", (1_300, clock(1_300)), CAP),
        Some(300)
    );
    assert_eq!(
        s.lease_ended(Q, b"a", b"JOB-1", (1_500, clock(1_500)), CAP),
        Some(200)
    );
    assert_eq!(
        s.lease_ended(Q, b"a", b"JOB-2", (1_450, clock(1_500)), CAP),
        Some(0),
        "never negative"
    );
    assert_eq!(
        s.lease_ended(Q, b"a", b"JOB-2", (1_600, clock(1_600)), CAP),
        None,
        "ended once"
    );
    assert_eq!(
        s.lease_ended(Q, b"a", b"JOB-9", (1_600, clock(1_600)), CAP),
        None,
        "not the module's"
    );
    let a = s
        .queue(Q.0, Q.1)
        .unwrap()
        .lane(b"a")
        .unwrap()
        .window(clock(1_600));
    assert_eq!((a.busy_ms, a.leases_ended), (500, 3));
    assert_eq!(s.leases_tracked(), 0);
    // The turn's slot is free again: a next turn reuses it.
    s.turn(
        Q,
        b"a",
        clock(2_000),
        Clamp::Weight,
        &served(&jobs[..1], true),
        keep(CAP),
    );
    assert_eq!(
        s.lease_ended(Q, b"a", b"JOB-0", (2_250, clock(2_250)), CAP),
        Some(250)
    );
}

#[test]
fn a_job_leased_again_replaces_its_old_lease() {
    let mut s = Store::default();
    let job = vec![b"JOB-1".to_vec()];
    s.turn(Q, b"a", clock(1_000), Clamp::One, &served(&job, true), keep(CAP));
    s.turn(Q, b"a", clock(5_000), Clamp::One, &served(&job, false), keep(CAP));
    assert_eq!(s.leases_tracked(), 1);
    assert_eq!(
        s.lease_ended(Q, b"a", b"JOB-1", (5_100, clock(5_100)), CAP),
        Some(100)
    );
}

#[test]
fn reset_forgets_a_queues_figures_but_not_its_leases() {
    let mut s = Store::default();
    let job = vec![b"JOB-1".to_vec()];
    s.turn(Q, b"a", clock(1_000), Clamp::One, &served(&job, true), keep(CAP));
    s.turn((0, b"other:"), b"a", clock(1_000), Clamp::One, &[], keep(CAP));
    s.reset(Q.0, Q.1);
    assert!(s.queue(Q.0, Q.1).unwrap().lane(b"a").is_none());
    assert_eq!(s.lanes_tracked(), 1, "the other queue's lane");
    assert_eq!(
        s.lease_ended(Q, b"a", b"JOB-1", (1_400, clock(1_400)), CAP),
        Some(400)
    );
    assert_eq!(s.queue(Q.0, Q.1).unwrap().lane(b"a").unwrap().total.busy_ms, 400);
}

#[test]
fn forgetting_queues_takes_their_lanes_and_leases_and_leaves_the_rest() {
    let mut s = Store::default();
    let job = vec![b"JOB-1".to_vec()];
    s.turn(Q, b"a", clock(1_000), Clamp::One, &served(&job, true), keep(CAP));
    s.turn(Q, b"b", clock(1_000), Clamp::One, &[], keep(CAP));
    s.turn(
        (0, b"other:"),
        b"a",
        clock(1_000),
        Clamp::One,
        &served(&job, true),
        keep(CAP),
    );
    let bytes = s.bytes();
    s.forget(|prefix| prefix == Q.1);
    assert!(s.queue(Q.0, Q.1).is_none());
    assert_eq!(
        (s.lanes_tracked(), s.leases_tracked()),
        (1, 1),
        "the other queue's"
    );
    assert!(s.bytes() < bytes);
    assert_eq!(s.lease_ended(Q, b"a", b"JOB-1", (1_400, clock(1_400)), CAP), None);
    assert_eq!(
        s.lease_ended((0, b"other:"), b"a", b"JOB-1", (1_400, clock(1_400)), CAP),
        Some(400)
    );
}

#[test]
fn the_lanes_idle_longest_go_first_and_the_count_stays_bounded() {
    let mut s = Store::default();
    let cap = 640;
    for i in 0..2_000i64 {
        let lane = format!("lane-{i}");
        s.turn(Q, lane.as_bytes(), clock(1_000 + i), Clamp::Depth, &[], keep(cap));
        assert!(s.lanes_tracked() <= cap);
    }
    let q = s.queue(Q.0, Q.1).unwrap();
    assert_eq!(q.lanes().count(), s.lanes_tracked());
    assert!(q.lane(b"lane-1999").is_some() && q.lane(b"lane-1500").is_some());
    assert!(q.lane(b"lane-0").is_none() && q.lane(b"lane-1000").is_none());
    // A lane served again is no longer the idlest.
    let mut s = Store::default();
    for i in 0..=cap as i64 {
        let lane = if i == cap as i64 {
            "lane-0".to_string()
        } else {
            format!("lane-{i}")
        };
        s.turn(Q, lane.as_bytes(), clock(1_000 + i), Clamp::Depth, &[], keep(cap));
    }
    let lane = b"lane-extra";
    s.turn(Q, lane, clock(9_000), Clamp::Depth, &[], keep(cap));
    let q = s.queue(Q.0, Q.1).unwrap();
    assert!(q.lane(b"lane-0").is_some(), "served last but one");
    assert!(q.lane(b"lane-1").is_none(), "the idlest");
}

#[test]
fn leases_are_bounded_the_oldest_turns_first() {
    let mut s = Store::default();
    // At least LEASE_FLOOR lanes' worth: 100,000 leases.
    let cap = 64;
    let bound = LEASE_FLOOR * LEASES_PER_LANE;
    let n = bound as i64 + 2_000;
    for i in 0..n {
        let job = vec![format!("JOB-{i}").into_bytes()];
        s.turn(
            Q,
            b"a",
            clock(1_000 + i),
            Clamp::One,
            &served(&job, true),
            keep(cap),
        );
        assert!(s.leases_tracked() <= bound);
    }
    let last = format!("JOB-{}", n - 1);
    assert_eq!(
        s.lease_ended(Q, b"a", last.as_bytes(), (n + 9_000, clock(n + 9_000)), cap),
        Some(8_001)
    );
    assert_eq!(
        s.lease_ended(Q, b"a", b"JOB-0", (n + 9_000, clock(n + 9_000)), cap),
        None,
        "dropped"
    );
}

#[test]
fn a_cap_of_zero_records_nothing_and_forgets_all() {
    let mut s = Store::default();
    s.turn(Q, b"a", clock(1_000), Clamp::Depth, &[], keep(CAP));
    s.turn(Q, b"b", clock(1_000), Clamp::Depth, &[], keep(0));
    assert_eq!((s.lanes_tracked(), s.bytes()), (0, std::mem::size_of::<Store>()));
}

/// 100,000 lanes, each served once with a wait and a lease ended: the bytes
/// each holds stay under the bound docs/commands.md gives (EMQ.STATS).
#[test]
fn a_hundred_thousand_lanes_fit_the_documented_bound() {
    let mut s = Store::default();
    let now = 1_765_000_000_000;
    for i in 0..100_000u64 {
        let lane = format!("tenant-{i}");
        let job = vec![brand(b"JOB", now - 1_000 - i as i64, i)];
        s.turn(
            Q,
            lane.as_bytes(),
            clock(now),
            Clamp::Weight,
            &served(&job, true),
            keep(CAP),
        );
        s.lease_ended(Q, lane.as_bytes(), &job[0], (now + 10, clock(now + 10)), CAP);
    }
    assert_eq!(s.lanes_tracked(), 100_000);
    let per_lane = s.bytes() / 100_000;
    assert!(per_lane <= BYTES_PER_LANE, "{per_lane} bytes a lane");
}

/// The bound docs/commands.md states for a lane served within one tenth of
/// the window (each more tenth it is served in adds a slot).
const BYTES_PER_LANE: usize = 600;

#[test]
fn a_lease_ending_keeps_the_bound_and_a_lower_bound_frees_memory() {
    let mut s = Store::default();
    let cap = 64;
    // Lanes served once, their leases ending after the bound dropped them.
    let jobs: Vec<Vec<u8>> = (0..1_000).map(|i| format!("JOB-{i}").into_bytes()).collect();
    for (i, job) in jobs.iter().enumerate() {
        let lane = format!("lane-{i}");
        s.turn(
            Q,
            lane.as_bytes(),
            clock(1_000),
            Clamp::One,
            &served(std::slice::from_ref(job), true),
            keep(100_000),
        );
    }
    let before = s.bytes();
    for (i, job) in jobs.iter().enumerate() {
        let lane = format!("lane-{i}");
        s.lease_ended(
            Q,
            lane.as_bytes(),
            job,
            (2_000 + i as i64, clock(2_000 + i as i64)),
            cap,
        );
        assert!(s.lanes_tracked() <= cap, "{} lanes", s.lanes_tracked());
    }
    s.keep_within(1);
    assert_eq!(s.lanes_tracked(), 1);
    assert!(s.bytes() * 10 < before, "{} bytes left of {before}", s.bytes());
    s.keep_within(0);
    assert_eq!((s.lanes_tracked(), s.leases_tracked()), (0, 0));
}

#[test]
fn a_mint_time_to_come_is_no_wait() {
    let mut s = Store::default();
    let ahead = vec![brand(b"JOB", 5_000 + EPOCH, 1), brand(b"JOB", 500 + EPOCH, 2)];
    s.turn(
        Q,
        b"a",
        clock(1_000 + EPOCH),
        Clamp::Depth,
        &served(&ahead, true),
        keep(CAP),
    );
    let a = s
        .queue(Q.0, Q.1)
        .unwrap()
        .lane(b"a")
        .unwrap()
        .window(clock(1_000 + EPOCH));
    assert_eq!((a.jobs, a.waits.count(), a.waits.max()), (2, 1, Some(500)));
}

const EPOCH: i64 = crate::model::figures::brand::EPOCH_MS;
