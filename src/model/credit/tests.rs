//! Unit and property tests of fairness by time's arithmetic (`model::credit`).
use super::*;
use crate::model::figures::{Clock, Keep, Served, Store};
use crate::model::schedule::Clamp;
use proptest::prelude::*;

#[test]
fn the_policy_reads_as_stored() {
    assert_eq!(Fairness::parse(None, None), Some(Fairness::Count));
    assert_eq!(
        Fairness::parse(Some(b"time"), None),
        Some(Fairness::Time { quantum_ms: 100 })
    );
    assert_eq!(
        Fairness::parse(Some(b"time"), Some(b"20")),
        Some(Fairness::Time { quantum_ms: 20 })
    );
    assert_eq!(Fairness::parse(Some(b"time"), Some(b"0")), None);
    assert_eq!(Fairness::parse(Some(b"time"), Some(b"x")), None);
    assert_eq!(Fairness::parse(Some(b"fast"), None), None);
}

#[test]
fn a_turn_tops_up_serves_what_the_credit_pays_and_charges_it() {
    // Weight 2, quantum 100 ms: 200,000 µs; jobs of 30 ms: K = 6.
    let credit = top_up(-50_000, 2, 100);
    assert_eq!(credit, 150_000);
    assert_eq!(time_k(credit, 30_000), 5);
    assert_eq!(charge(credit, 5, 30_000), 0);
    assert_eq!(time_k(10, 30_000), 1, "a positive credit pays for one at least");
    assert_eq!(cost_or_default(None, 100), 100_000);
    assert_eq!(cost_or_default(Some(0), 100), 1);
    // A job charged 30 ms that used 45 ms: 15 ms more debt.
    assert_eq!(correct(0, 45, 30_000), -15_000);
    assert_eq!(correct(0, 10, 30_000), 20_000, "less used: given back");
    assert_eq!(next_cost(30_000, 46), 32_000);
    assert_eq!(next_cost(30_000, 29), 29_875);
    assert_eq!(emptied(5_000), 0);
    assert_eq!(emptied(-5_000), -5_000);
}

#[test]
fn a_stamp_reads_as_written() {
    let s = Stamp::parse(Some(b"1000"), Some(b"30000")).unwrap();
    assert_eq!(
        s,
        Stamp {
            claimed: 1000,
            charged: 30_000
        }
    );
    assert_eq!(s.used_since_claim(1_250), 250);
    assert_eq!(s.used_since_claim(900), 0);
    assert_eq!(Stamp::parse(None, Some(b"1")), None);
    assert_eq!(Stamp::parse(Some(b"x"), Some(b"1")), None);
}

#[test]
fn the_cost_converges_to_within_eight_microseconds() {
    let mut cost = cost_or_default(None, 100);
    for _ in 0..400 {
        cost = next_cost(cost, 7);
    }
    assert!((cost - 7_000).abs() <= 8, "{cost}");
}

proptest! {
    /// Every lease end corrects its charge exactly once: over each
    /// turn, the time charged equals the time from its claim to its
    /// last end (jobs worked one after another), however the ends come.
    #[test]
    fn each_turn_is_charged_the_time_from_its_claim_to_its_last_end(
        turns in proptest::collection::vec((1usize..6, 0i64..50, proptest::collection::vec(0i64..400, 6), 1i64..90_000), 1..12),
        ends_twice in any::<bool>(),
    ) {
        let mut store = Store::default();
        let q = (0, &b"q:"[..]);
        let mut t = 1_000_000i64;
        for (n, (k, gap, lengths, cost)) in turns.iter().enumerate() {
            t += gap;
            let claimed = t;
            let jobs: Vec<Vec<u8>> = (0..*k).map(|j| format!("JOB-{n}-{j}").into_bytes()).collect();
            let served: Vec<Served> = jobs.iter().map(|j| Served { job: j, first: true }).collect();
            store.turn(q, b"a", Clock::new(claimed, 60_000), Clamp::Weight, &served, Keep { lanes: 0, time: true });
            let mut credit = charge(0, *k as i64, *cost);
            let mut end = claimed;
            for (j, job) in jobs.iter().enumerate() {
                end += lengths[j];
                let used = store.lease_ended(q, b"a", job, (end, Clock::new(end, 60_000)), 0);
                credit = correct(credit, used.expect("the module granted it"), *cost);
                if ends_twice {
                    prop_assert_eq!(store.lease_ended(q, b"a", job, (end + 5, Clock::new(end + 5, 60_000)), 0), None);
                }
            }
            prop_assert_eq!(-credit, (end - claimed) * 1000);
            t = end;
        }
    }
}
