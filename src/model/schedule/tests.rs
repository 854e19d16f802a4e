//! Unit tests of the pure scheduling rules in `model::schedule`.

use super::*;

fn lane(depth: u64, active: i64, limit: Option<i64>) -> Lane {
    Lane {
        depth,
        active,
        limit,
        paused: false,
        throttled: false,
    }
}

fn head(depth: u64, active: i64, limit: Option<i64>, weight: i64) -> Head {
    Head {
        name_empty: false,
        depth: Some(depth),
        weight: Ok(Some(weight)),
        limit: Ok(limit),
        active: Ok(Some(active)),
        paused: false,
        rate: Ok(None),
        now_us: NOW_US,
        time: None,
    }
}

const NOW_US: i64 = 1_700_000_000_000_000;

fn served_k(turn: Turn) -> i64 {
    match turn {
        Turn::Serve { k, .. } => k,
        other => panic!("expected a served turn, got {other:?}"),
    }
}

#[test]
fn the_worked_example_depth_clamps_the_weight() {
    // weight 5, depth 3, headroom 4 (limit 6, active 2) -> K = 3
    assert_eq!(serve_count(5, 3, Some(6), 2), 3);
    let turn = head_turn(&head(3, 2, Some(6), 5), ClaimKind::Weighted, 1000);
    assert_eq!(served_k(turn), 3);
    // depth 3 is served whole, so the lane leaves the ring.
    assert!(leaves_after(&lane(3, 2, Some(6)), 3, 3));
}

#[test]
fn each_claim_asks_for_its_own_share() {
    let h = head(9, 1, Some(6), 3);
    assert_eq!(served_k(head_turn(&h, ClaimKind::One, 1000)), 1);
    assert_eq!(served_k(head_turn(&h, ClaimKind::Weighted, 1000)), 3);
    assert_eq!(served_k(head_turn(&h, ClaimKind::Batch, 1000)), 5, "the headroom");
    assert_eq!(
        served_k(head_turn(&head(9, 0, None, 1), ClaimKind::Batch, 1000)),
        9,
        "the depth"
    );
    assert_eq!(
        served_k(head_turn(&head(9, 0, None, 1), ClaimKind::Batch, 4)),
        4,
        "emq.max-claim"
    );
    assert_eq!(
        served_k(head_turn(&head(9, 0, None, 50), ClaimKind::Weighted, 4)),
        4
    );
    assert_eq!(
        head_turn(&head(9, 6, Some(6), 1), ClaimKind::One, 1000),
        Turn::Full,
        "a plain claim never leases past the ceiling either"
    );
}

#[test]
fn each_clamp_can_win() {
    assert_eq!(serve_count(2, 9, Some(9), 0), 2, "weight");
    assert_eq!(serve_count(9, 2, Some(9), 0), 2, "depth");
    assert_eq!(serve_count(9, 9, Some(5), 3), 2, "headroom");
    assert_eq!(serve_count(9, 9, None, 1_000), 9, "no ceiling: active ignored");
}

#[test]
fn lanes_that_cannot_be_served_are_dropped() {
    let w = ClaimKind::Weighted;
    assert_eq!(
        head_turn(&head(5, 4, Some(4), 3), w, 1000),
        Turn::Full,
        "at its ceiling"
    );
    assert_eq!(head_turn(&head(5, 7, Some(4), 3), w, 1000), Turn::Full, "past it");
    assert_eq!(head_turn(&head(0, 0, None, 3), w, 1000), Turn::Drop, "empty");
    assert_eq!(
        head_turn(&head(5, 0, Some(0), 3), w, 1000),
        Turn::Full,
        "a ceiling of 0"
    );
    let paused = Head {
        paused: true,
        ..head(5, 0, None, 1)
    };
    assert_eq!(head_turn(&paused, w, 1000), Turn::Drop, "paused");
    let nameless = Head {
        name_empty: true,
        ..head(5, 0, None, 1)
    };
    assert_eq!(head_turn(&nameless, w, 1000), Turn::Drop, "an empty name");
}

#[test]
fn a_lane_whose_own_state_is_damaged_is_skipped() {
    let ok = head(5, 1, Some(3), 2);
    let w = ClaimKind::Weighted;
    let skip = |h: Head| head_turn(&h, w, 1000);
    assert_eq!(
        skip(Head {
            weight: Err(()),
            ..ok
        }),
        Turn::Skip(Damage::Weight)
    );
    assert_eq!(skip(Head { limit: Err(()), ..ok }), Turn::Skip(Damage::Limit));
    assert_eq!(
        skip(Head {
            active: Err(()),
            ..ok
        }),
        Turn::Skip(Damage::Active)
    );
    assert_eq!(
        skip(Head {
            active: Ok(Some(-3)),
            ..ok
        }),
        Turn::Skip(Damage::Active),
        "a negative active count would lease past the ceiling"
    );
    assert_eq!(skip(Head { depth: None, ..ok }), Turn::Skip(Damage::PendingType));
    assert_eq!(
        head_turn(&head(3, i64::MAX - 1, None, 5), w, 1000),
        Turn::Skip(Damage::Active),
        "the count would overflow"
    );
    // Read in @gwclaim's order: an empty name, an empty or paused lane is
    // dropped before the weight is read.
    assert_eq!(
        skip(Head {
            name_empty: true,
            weight: Err(()),
            ..ok
        }),
        Turn::Drop
    );
    assert_eq!(
        skip(Head {
            name_empty: true,
            depth: None,
            ..ok
        }),
        Turn::Drop,
        "a nameless lane is never served, whatever its key holds"
    );
    assert_eq!(
        skip(Head {
            depth: Some(0),
            limit: Err(()),
            ..ok
        }),
        Turn::Drop
    );
}

#[test]
fn the_guard_keeps_a_lane_with_work_and_room() {
    assert!(!leaves_after(&lane(5, 0, None), 2, 2));
    assert!(leaves_after(&lane(5, 0, Some(2)), 2, 2), "reaches its ceiling");
    assert!(!leaves_after(&lane(5, 0, Some(2)), 1, 1));
    assert!(leaves_after(&lane(2, 0, None), 2, 0), "only strays, now empty");
    assert!(!leaves_after(&lane(3, 0, None), 2, 0), "only strays, more left");
}

#[test]
fn weights_below_one_are_one() {
    assert_eq!(effective_weight(None), 1);
    assert_eq!(effective_weight(Some(0)), 1);
    assert_eq!(effective_weight(Some(-4)), 1);
    assert_eq!(effective_weight(Some(7)), 7);
}

#[test]
fn extremes_do_not_wrap() {
    assert_eq!(
        serve_count(i64::MAX, u64::MAX, Some(i64::MAX), i64::MIN),
        i64::MAX
    );
    assert_eq!(serve_count(i64::MAX, 3, Some(i64::MIN), i64::MAX), i64::MIN);
    assert_eq!(
        served_k(head_turn(
            &head(3, i64::MAX - 3, None, i64::MAX),
            ClaimKind::Weighted,
            i64::MAX
        )),
        3
    );
}

#[test]
fn serviceability_and_ring_transitions() {
    let idle = lane(0, 0, None);
    let ready = lane(1, 0, None);
    let full = lane(1, 2, Some(2));
    let paused = Lane {
        paused: true,
        ..ready
    };
    let throttled = Lane {
        throttled: true,
        ..ready
    };
    assert!(!idle.serviceable());
    assert!(ready.serviceable());
    assert!(!full.serviceable());
    assert!(!paused.serviceable());
    assert!(!throttled.serviceable());
    assert_eq!(ring_change(&idle, &ready), RingChange::Join);
    assert_eq!(ring_change(&ready, &full), RingChange::Leave);
    assert_eq!(ring_change(&ready, &paused), RingChange::Leave);
    assert_eq!(ring_change(&ready, &ready), RingChange::Stay);
    assert_eq!(ring_change(&idle, &paused), RingChange::Stay);
}

#[test]
fn a_rate_clamps_k_and_throttles_when_it_allows_none() {
    use crate::model::rate::Rate;
    let w = ClaimKind::Weighted;
    let rate = Rate::new(20, 1000, 3).unwrap();
    let fresh = Head {
        rate: Ok(Some((rate, None))),
        ..head(10, 0, None, 8)
    };
    assert_eq!(served_k(head_turn(&fresh, w, 1000)), 3, "the burst clamps K");
    let one_left = Head {
        rate: Ok(Some((rate, Some(rate.after(None, NOW_US, 2))))),
        ..fresh
    };
    assert_eq!(served_k(head_turn(&one_left, w, 1000)), 1);
    let spent = rate.after(None, NOW_US, 3);
    let none_left = Head {
        rate: Ok(Some((rate, Some(spent)))),
        ..fresh
    };
    assert_eq!(
        head_turn(&none_left, w, 1000),
        Turn::Throttle {
            until: NOW_US / 1000 + 50
        }
    );
    assert_eq!(
        head_turn(
            &Head {
                rate: Err(()),
                ..fresh
            },
            w,
            1000
        ),
        Turn::Skip(Damage::Rate)
    );
    // The rate is read last: a lane that cannot be served for another
    // reason is dropped, damaged rate or not.
    assert_eq!(
        head_turn(
            &Head {
                rate: Err(()),
                ..head(0, 0, None, 8)
            },
            w,
            1000
        ),
        Turn::Drop
    );
}

fn clamp_of(turn: Turn) -> Clamp {
    match turn {
        Turn::Serve { clamp, .. } => clamp,
        other => panic!("expected a served turn, got {other:?}"),
    }
}

#[test]
fn the_clamp_that_decided_k_is_the_first_least_bound() {
    let (w, b) = (ClaimKind::Weighted, ClaimKind::Batch);
    assert_eq!(
        clamp_of(head_turn(&head(9, 0, Some(9), 2), w, 1000)),
        Clamp::Weight
    );
    assert_eq!(
        clamp_of(head_turn(&head(2, 0, Some(9), 5), w, 1000)),
        Clamp::Depth
    );
    assert_eq!(
        clamp_of(head_turn(&head(9, 7, Some(9), 5), w, 1000)),
        Clamp::Ceiling
    );
    assert_eq!(clamp_of(head_turn(&head(9, 0, None, 50), w, 4)), Clamp::MaxClaim);
    assert_eq!(clamp_of(head_turn(&head(9, 0, None, 1), b, 4)), Clamp::MaxClaim);
    assert_eq!(
        clamp_of(head_turn(&head(3, 0, None, 1), b, 4)),
        Clamp::Depth,
        "BCLAIM reads no weight"
    );
    assert_eq!(
        clamp_of(head_turn(&head(9, 0, Some(9), 3), ClaimKind::One, 1000)),
        Clamp::One
    );
    // Ties go to the first in the order weight, depth, ceiling, rate, max-claim.
    assert_eq!(clamp_of(head_turn(&head(3, 0, Some(3), 3), w, 3)), Clamp::Weight);
    assert_eq!(
        clamp_of(head_turn(&head(3, 6, Some(9), 5), w, 1000)),
        Clamp::Depth
    );
    assert_eq!(clamp_of(head_turn(&head(9, 6, Some(9), 5), b, 3)), Clamp::Ceiling);
    let rate = crate::model::rate::Rate::parse(b"2 100 2").unwrap();
    let rated = Head {
        rate: Ok(Some((rate, None))),
        ..head(9, 0, None, 5)
    };
    assert_eq!(clamp_of(head_turn(&rated, w, 1000)), Clamp::Rate);
    assert_eq!(
        clamp_of(head_turn(&rated, w, 2)),
        Clamp::Rate,
        "a tie with max-claim"
    );
    assert_eq!(head_turn(&head(9, 9, Some(9), 5), w, 1000), Turn::Full);
}
