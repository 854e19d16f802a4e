//! Property-based fuzzing (proptest) of the argument parsers and the
//! scheduling logic: thousands of generated inputs per run, bounded in time,
//! part of `make test`. (cargo fuzz needs a nightly toolchain, which this
//! project's machines do not have.)

use proptest::prelude::*;

use crate::args::{self, parse_i64};
use crate::keys;
use crate::schedule::{claim_turn, ring_change, serve_count, Lane, RingChange, Turn};
use crate::state::parse_record;

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: 3_000,
        ..ProptestConfig::default()
    }
}

/// The server's own hash-tag rule (cluster.c keyHashSlot): the first `{`,
/// then the first `}` after it, with something in between.
fn server_tag(key: &[u8]) -> Option<&[u8]> {
    let open = key.iter().position(|&b| b == b'{')?;
    let close = key[open + 1..].iter().position(|&b| b == b'}')?;
    (close > 0).then(|| &key[open + 1..open + 1 + close])
}

fn lane_strategy() -> impl Strategy<Value = Lane> {
    (
        0u64..50,
        -5i64..60,
        proptest::option::of(-3i64..40),
        any::<bool>(),
    )
        .prop_map(|(depth, active, limit, paused)| Lane {
            depth,
            active,
            limit,
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
    fn hash_tags_follow_the_servers_rule(key in proptest::collection::vec(prop_oneof![Just(b'{'), Just(b'}'), Just(b'a')], 0..12)) {
        prop_assert_eq!(keys::has_hash_tag(&key), server_tag(&key).is_some());
        // Every key the module derives from a tagged prefix hashes like the prefix.
        if let Some(tag) = server_tag(&key) {
            let derived = keys::pending(&key, b"{lane}");
            prop_assert_eq!(server_tag(&derived), Some(tag));
        }
    }

    #[test]
    fn lease_records_round_trip(mint in any::<f64>().prop_filter("a score", |m| !m.is_nan()), lane in "[ -~]{1,20}") {
        let record = format!("{mint} {lane}");
        let (text, parsed, parsed_lane) = parse_record(record.as_bytes()).expect("parses");
        prop_assert_eq!(parsed, mint);
        let printed = format!("{mint}");
        prop_assert_eq!(text, printed.as_bytes());
        prop_assert_eq!(parsed_lane, lane.as_bytes());
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

    #[test]
    fn a_turn_never_passes_the_ceiling_and_the_guard_is_exact(weight in 1i64..20, lane in lane_strategy()) {
        match claim_turn(weight, &lane) {
            Turn::Drop => prop_assert!(lane.depth == 0 || serve_count(weight, lane.depth, lane.limit, lane.active) <= 0),
            Turn::Serve { k, leaves_ring } => {
                prop_assert!(k >= 1 && k <= weight && k as u64 <= lane.depth);
                let active = lane.active + k;
                if let Some(lim) = lane.limit {
                    prop_assert!(active <= lim.max(lane.active), "past the ceiling");
                }
                let after = Lane { depth: lane.depth - k as u64, active, paused: false, ..lane };
                prop_assert_eq!(leaves_ring, !after.serviceable());
            }
        }
    }

    #[test]
    fn ring_changes_follow_serviceability(before in lane_strategy(), after in lane_strategy()) {
        let change = ring_change(&before, &after);
        let expect = match (before.serviceable(), after.serviceable()) {
            (false, true) => RingChange::Join,
            (true, false) => RingChange::Leave,
            _ => RingChange::Stay,
        };
        prop_assert_eq!(change, expect);
    }
}
