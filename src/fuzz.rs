//! Property-based fuzzing (proptest) of the argument parsers and the
//! scheduling rules: thousands of generated inputs per run, part of
//! `make test`. Each property states a rule in other terms than the code
//! does (the hash-tag rule is checked against the server's own CLUSTER
//! KEYSLOT in tests/cluster.rs). (cargo fuzz needs a nightly toolchain,
//! which this project's machines do not have.)

use proptest::prelude::*;

use crate::args::{self, parse_i64};
use crate::record;
use crate::schedule::{
    head_turn, leaves_after, ring_change, serve_count, take_heads, Head, Lane, RingChange, Turn,
};

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 3_000,
        ..ProptestConfig::default()
    }
}

fn stored() -> impl Strategy<Value = Result<Option<i64>, ()>> {
    prop_oneof![
        Just(Ok(None)),
        (-5i64..60).prop_map(|v| Ok(Some(v))),
        Just(Err(())),
    ]
}

fn head_strategy() -> impl Strategy<Value = Head> {
    (
        proptest::bool::weighted(0.1),
        proptest::option::weighted(0.9, 0u64..50),
        stored(),
        stored(),
        stored(),
        any::<bool>(),
    )
        .prop_map(|(name_empty, depth, weight, limit, active, paused)| Head {
            name_empty,
            depth,
            weight,
            limit,
            active,
            paused,
        })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn integers_round_trip_and_are_canonical(v in any::<i64>()) {
        prop_assert_eq!(parse_i64(v.to_string().as_bytes()), Some(v));
    }

    #[test]
    fn whatever_parses_is_the_canonical_text(s in proptest::collection::vec(any::<u8>(), 0..24)) {
        if let Some(v) = parse_i64(&s) {
            prop_assert_eq!(v.to_string().into_bytes(), s);
        }
    }

    #[test]
    fn digit_strings_parse_exactly_when_they_fit(s in "-?[0-9]{1,22}") {
        let canonical = s == "0" || (s.trim_start_matches('-').starts_with(|c: char| c != '0') && s != "-0");
        let fits = s.parse::<i64>().is_ok();
        prop_assert_eq!(parse_i64(s.as_bytes()).is_some(), canonical && fits);
    }

    #[test]
    fn a_lease_is_in_range_or_refused(s in "[-+0-9a-z. ]{0,16}") {
        match args::lease(s.as_bytes()) {
            Ok(v) => prop_assert!((1..=args::LEASE_MAX).contains(&v)),
            Err(e) => prop_assert!(e.message().unwrap().starts_with("ERR lease")),
        }
    }

    #[test]
    fn a_record_splits_where_the_mint_ends(mint in "[-+.e0-9a-z]{1,12}", lane in "[ -~]{1,20}") {
        let text = record::parts(mint.as_bytes(), lane.as_bytes()).concat();
        let rec = record::parse(&text).expect("a mint without spaces and a lane");
        prop_assert_eq!(rec.mint, mint.as_bytes());
        prop_assert_eq!(rec.lane, lane.as_bytes());
    }

    #[test]
    fn k_is_the_smallest_clamp(weight in 1i64..1_000, depth in 0u64..1_000, limit in proptest::option::of(-5i64..1_000), active in -5i64..1_000) {
        let k = serve_count(weight, depth, limit, active);
        prop_assert!(k <= weight && k <= depth as i64);
        if let Some(lim) = limit {
            prop_assert!(k <= lim - active);
        }
        let mut clamps = vec![weight, depth as i64];
        clamps.extend(limit.map(|l| l - active));
        prop_assert!(clamps.contains(&k));
    }

    /// Whatever the head's state: a served turn never passes the ceiling,
    /// serves only a sound, serviceable lane, and never more than its
    /// weight; a lane that is sound and serviceable is never dropped or
    /// skipped.
    #[test]
    fn a_turn_serves_exactly_the_sound_serviceable_heads(head in head_strategy(), max_claim in 1i64..8) {
        let sound = head.weight.is_ok() && head.limit.is_ok()
            && matches!(head.active, Ok(a) if a.unwrap_or(0) >= 0) && head.depth.is_some();
        let lane = Lane {
            depth: head.depth.unwrap_or(0),
            active: head.active.ok().flatten().unwrap_or(0),
            limit: head.limit.ok().flatten(),
            paused: head.paused,
        };
        match head_turn(&head, max_claim) {
            Turn::Serve { k, lane: served } => {
                prop_assert!(!head.name_empty && sound && lane.serviceable());
                prop_assert_eq!(served, Lane { paused: false, ..lane });
                prop_assert!(k >= 1 && k as u64 <= lane.depth && k <= max_claim);
                if let Some(lim) = lane.limit {
                    prop_assert!(lane.active + k <= lim, "past the ceiling");
                }
                let weight = head.weight.ok().flatten().unwrap_or(1).max(1);
                prop_assert!(k <= weight);
            }
            Turn::Skip(_) => prop_assert!(!head.name_empty && !sound),
            Turn::Drop => prop_assert!(head.name_empty || !lane.serviceable() || head.depth == Some(0)),
        }
    }

    /// The guard after a turn: the lane stays exactly when it can still be
    /// served.
    #[test]
    fn the_guard_keeps_exactly_the_serviceable(depth in 1u64..40, active in 0i64..30, limit in proptest::option::of(1i64..40), consumed in 0u64..40, leased in 0i64..10) {
        let lane = Lane { depth, active, limit, paused: false };
        let after = Lane { depth: depth.saturating_sub(consumed), active: active + leased, limit, paused: false };
        prop_assert_eq!(leaves_after(&lane, consumed, leased), !after.serviceable());
    }

    /// Taking heads: every fresh head before the last one taken is taken,
    /// no duplicate is, and no more than K.
    #[test]
    fn fresh_heads_are_taken_in_order(k in 1i64..6, dups in proptest::collection::vec(any::<bool>(), 0..12)) {
        let (consumed, taken) = take_heads(k, dups.clone());
        prop_assert!(taken as i64 <= k);
        prop_assert!(consumed <= dups.len());
        let fresh_in_reach: Vec<usize> = (0..consumed).filter(|&i| !dups[i]).collect();
        prop_assert_eq!(taken, fresh_in_reach.len());
        if (taken as i64) < k {
            prop_assert_eq!(consumed, dups.len(), "stopped early");
        } else if let Some(&last) = fresh_in_reach.last() {
            prop_assert_eq!(consumed, last + 1, "nothing after the K-th is removed");
        }
    }

    /// The ring invariant through any change: a lane ringed exactly when it
    /// was serviceable, moved as `ring_change` says, is ringed exactly when
    /// it is serviceable after.
    #[test]
    fn the_ring_follows_serviceability(before in lane_strategy(), after in lane_strategy()) {
        let ringed = before.serviceable();
        let ringed_after = match ring_change(&before, &after) {
            RingChange::Join => { prop_assert!(!ringed, "joined twice"); true }
            RingChange::Leave => { prop_assert!(ringed, "left while not in"); false }
            RingChange::Stay => ringed,
        };
        prop_assert_eq!(ringed_after, after.serviceable());
    }
}

fn lane_strategy() -> impl Strategy<Value = Lane> {
    (0u64..4, 0i64..4, proptest::option::of(1i64..4), any::<bool>()).prop_map(
        |(depth, active, limit, paused)| Lane {
            depth,
            active,
            limit,
            paused,
        },
    )
}
