//! Property-based fuzzing (proptest) of the grammar and the scheduling
//! rules: thousands of generated inputs per run, part of `make test`. Each
//! property states a rule in other terms than the code does (the hash-tag
//! rule is checked against the server's own CLUSTER KEYSLOT in
//! tests/cluster.rs).

use proptest::prelude::*;

use super::grammar::{self, parse_i64};
use super::rate::Rate;
use super::row::{head_fate, return_fate, Fate, Home, ReturnFate, RowView, Stalls};
use super::schedule::{
    head_turn, leaves_after, ring_change, serve_count, ClaimKind, Head, Lane, RingChange, Turn,
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
            rate: Ok(None),
            now_us: 0,
            time: None,
        })
}

fn claim_strategy() -> impl Strategy<Value = ClaimKind> {
    prop_oneof![
        Just(ClaimKind::One),
        Just(ClaimKind::Weighted),
        Just(ClaimKind::Batch)
    ]
}

fn lane_strategy() -> impl Strategy<Value = Lane> {
    (
        0u64..4,
        0i64..4,
        proptest::option::of(1i64..4),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_map(|(depth, active, limit, paused, throttled)| Lane {
            depth,
            active,
            limit,
            paused,
            throttled,
        })
}

fn text() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(prop_oneof![
        Just("pending".to_string()),
        Just("active".to_string()),
        Just("scheduled".to_string()),
        Just("dead".to_string()),
        "[a-c]{1,2}",
        "-?[0-9]{1,3}",
    ])
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
        match grammar::lease(s.as_bytes()) {
            Ok(v) => prop_assert!((1..=grammar::LEASE_MAX).contains(&v)),
            Err(e) => prop_assert!(e.message().unwrap().starts_with("ERR lease")),
        }
    }

    #[test]
    fn k_is_the_smallest_clamp(want in 1i64..1_000, depth in 0u64..1_000, limit in proptest::option::of(-5i64..1_000), active in -5i64..1_000) {
        let k = serve_count(want, depth, limit, active);
        prop_assert!(k <= want && k <= depth as i64);
        if let Some(lim) = limit {
            prop_assert!(k <= lim - active);
        }
        let mut clamps = vec![want, depth as i64];
        clamps.extend(limit.map(|l| l - active));
        prop_assert!(clamps.contains(&k));
    }

    /// Whatever the head's state: a served turn never passes the ceiling,
    /// serves only a sound, serviceable lane, never more than its claim asks
    /// for; a lane that is sound and serviceable is never dropped or skipped.
    #[test]
    fn a_turn_serves_exactly_the_sound_serviceable_heads(head in head_strategy(), claim in claim_strategy(), max_claim in 1i64..8) {
        // (A claim that does not read the weight passes it as absent.)
        let sound = head.weight.is_ok() && head.limit.is_ok()
            && matches!(head.active, Ok(a) if a.unwrap_or(0) >= 0) && head.depth.is_some();
        let lane = Lane {
            depth: head.depth.unwrap_or(0),
            active: head.active.ok().flatten().unwrap_or(0),
            limit: head.limit.ok().flatten(),
            paused: head.paused,
            throttled: false,
        };
        match head_turn(&head, claim, max_claim) {
            Turn::Serve { k, lane: served, .. } => {
                prop_assert!(!head.name_empty && lane.serviceable());
                prop_assert_eq!(served, Lane { paused: false, ..lane });
                prop_assert!(k >= 1 && k as u64 <= lane.depth && k <= max_claim);
                if let Some(lim) = lane.limit {
                    prop_assert!(lane.active + k <= lim, "past the ceiling");
                }
                match claim {
                    ClaimKind::One => prop_assert_eq!(k, 1),
                    ClaimKind::Weighted => prop_assert!(k <= head.weight.ok().flatten().unwrap_or(1).max(1)),
                    ClaimKind::Batch => {}
                }
            }
            Turn::Skip(_) => prop_assert!(!head.name_empty && !sound),
            Turn::Drop => prop_assert!(head.name_empty || !lane.serviceable()),
            Turn::Full => prop_assert!(lane.limit.is_some_and(|lim| lane.active >= lim) && sound),
            Turn::Throttle { .. } => prop_assert!(false, "throttled without a rate"),
            Turn::Pass { .. } => prop_assert!(false, "passed over without fairness by time"),
        }
    }

    /// The guard after a turn: the lane stays exactly when it can still be
    /// served.
    #[test]
    fn the_guard_keeps_exactly_the_serviceable(depth in 1u64..40, active in 0i64..30, limit in proptest::option::of(1i64..40), consumed in 0u64..40, leased in 0i64..10) {
        let lane = Lane { depth, active, limit, paused: false, throttled: false };
        let after = Lane { depth: depth.saturating_sub(consumed), active: active + leased, ..lane };
        prop_assert_eq!(leaves_after(&lane, consumed, leased), !after.serviceable());
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

    /// A head is leased only when its row is this lane's and not leased,
    /// delayed or dead; the lease's token is one more than its attempts.
    #[test]
    fn only_the_lanes_own_waiting_jobs_are_leased(exists in any::<bool>(), state in text(), group in proptest::option::of("[a-c]"), attempts in text()) {
        let row = RowView {
            exists,
            state: state.as_deref().map(str::as_bytes),
            group: group.as_deref().map(str::as_bytes),
            attempts: attempts.as_deref().map(str::as_bytes),
        };
        let elsewhere = matches!(state.as_deref(), Some("active" | "scheduled" | "dead"));
        match head_fate(b"a", &row) {
            Fate::Lease(n) => {
                prop_assert!(exists && !elsewhere && group.as_deref() == Some("a"));
                let before = attempts.as_deref().map_or(Some(0), |a| a.parse::<i64>().ok());
                prop_assert_eq!(Some(n), before.map(|b| b + 1));
            }
            Fate::Stray(Home::Elsewhere) => prop_assert!(!exists || elsewhere),
            Fate::Stray(Home::Lane(g)) => prop_assert!(exists && !elsewhere && g != b"a" && Some(g) == group.as_deref().map(str::as_bytes)),
            Fate::Stray(Home::Flat) => prop_assert!(exists && !elsewhere && group.is_none()),
            Fate::Damaged => prop_assert!(exists && !elsewhere && group.as_deref() == Some("a")),
        }
    }

    /// A counted return raises the count by one; the job dies exactly when
    /// the count reaches the threshold.
    #[test]
    fn a_job_dies_exactly_at_its_threshold(stalled in proptest::option::of(0i64..20), max in proptest::option::of(1i64..20)) {
        let text = stalled.map(|s| s.to_string());
        let fate = return_fate(text.as_deref().map(str::as_bytes), Stalls { count: true, max });
        let after = stalled.unwrap_or(0) + 1;
        match fate {
            ReturnFate::Dies { stalled: n } => prop_assert!(n == after && max.is_some_and(|m| after >= m)),
            ReturnFate::Back { stalled: n } => prop_assert!(n == Some(after) && max.is_none_or(|m| after < m)),
        }
    }

    /// The GCRA bound, whatever the claims: starts at times a claim turn
    /// took (each asking for up to `want` at once), counted over every
    /// window, never exceed `burst + t·n/period_ms`, plus the one the
    /// bound is rounded up by.
    #[test]
    fn a_rate_never_starts_more_than_its_bound(
        n in 1i64..50, period in 1i64..3_000, burst in 1i64..10,
        claims in proptest::collection::vec((0i64..40_000, 1i64..12), 1..200),
    ) {
        let rate = Rate::new(n, period, burst).unwrap();
        let mut now_us = 1_000_000_000i64;
        let mut tat: Option<i64> = None;
        let mut starts: Vec<i64> = Vec::new();
        for (gap, want) in claims {
            now_us += gap;
            let allowed = rate.allowed(tat, now_us);
            let k = want.min(allowed);
            if k == 0 {
                // Throttled: the next start is no earlier than allowed.
                let until = rate.next_start_ms(tat.unwrap());
                prop_assert!(until * 1000 > now_us);
                prop_assert!(rate.allowed(tat, until * 1000) >= 1);
                continue;
            }
            tat = Some(rate.after(tat, now_us, k));
            starts.extend(std::iter::repeat_n(now_us, k as usize));
        }
        for (i, &from) in starts.iter().enumerate() {
            for window in [250_000i64, 500_000, 1_000_000, 3_000_000] {
                let count = starts[i..].iter().take_while(|&&t| t < from + window).count() as i64;
                let bound = burst + (window / 1000) * n / period + 1;
                prop_assert!(count <= bound, "{count} starts in {window} us, bound {bound}");
            }
        }
    }
}
