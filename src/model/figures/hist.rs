//! A histogram of waits in ms, log-bucketed (SPEC section 8: relative error
//! at most 5%): a bucket of its own for each value below 32, then sixteen
//! buckets to each power of two. A bucket is at most a sixteenth of its lower
//! bound wide, so its midpoint is within 1/32 (3.1%) of any value in it.
//! Sparse: only buckets that hold a value take room, and a lane's waits fall
//! in a few.

/// Values below this have a bucket each.
const EXACT: u64 = 32;
/// Buckets to each power of two above [`EXACT`] (2^4).
const SUB_BITS: u32 = 4;

/// The bucket of `v`.
pub fn bucket(v: u64) -> u16 {
    if v < EXACT {
        return v as u16;
    }
    let top = 63 - v.leading_zeros(); // >= 5
    let sub = (v >> (top - SUB_BITS)) & ((1 << SUB_BITS) - 1);
    (EXACT + u64::from(top - 5) * (1 << SUB_BITS) + sub) as u16
}

/// The values bucket `b` holds: `[low, high)`.
pub fn bounds(b: u16) -> (u64, u64) {
    let b = u64::from(b);
    if b < EXACT {
        return (b, b + 1);
    }
    let top = (b - EXACT) / (1 << SUB_BITS) + 5;
    let sub = (b - EXACT) % (1 << SUB_BITS);
    let width = 1u64 << (top - u64::from(SUB_BITS));
    let low = ((1 << SUB_BITS) + sub) * width;
    (low, low.saturating_add(width))
}

/// What bucket `b` reports: its midpoint (its value, below [`EXACT`]).
pub fn middle(b: u16) -> u64 {
    let (low, high) = bounds(b);
    low + (high - low) / 2
}

/// A histogram: the buckets that hold values, in bucket order, each with its
/// count; the count, the sum and the largest value seen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Hist {
    cells: Vec<(u16, u32)>,
    count: u64,
    sum: u64,
    max: u64,
}

impl Hist {
    pub fn add(&mut self, v: u64) {
        let b = bucket(v);
        match self.cells.binary_search_by_key(&b, |c| c.0) {
            Ok(i) => self.cells[i].1 = self.cells[i].1.saturating_add(1),
            Err(i) => {
                // One at a time: most lanes' waits fall in a few buckets.
                self.cells.reserve_exact(1);
                self.cells.insert(i, (b, 1));
            }
        }
        self.count += 1;
        self.sum = self.sum.saturating_add(v);
        self.max = self.max.max(v);
    }

    /// Adds every value of `other`.
    pub fn merge(&mut self, other: &Hist) {
        for &(b, n) in &other.cells {
            match self.cells.binary_search_by_key(&b, |c| c.0) {
                Ok(i) => self.cells[i].1 = self.cells[i].1.saturating_add(n),
                Err(i) => self.cells.insert(i, (b, n)),
            }
        }
        self.count += other.count;
        self.sum = self.sum.saturating_add(other.sum);
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    /// The values added, summed.
    pub fn sum(&self) -> u64 {
        self.sum
    }

    /// Each bucket that holds values: the largest value it holds (waits are
    /// whole ms: every value up to it is counted exactly) and its count.
    pub fn buckets(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.cells.iter().map(|&(b, n)| (bounds(b).1 - 1, u64::from(n)))
    }

    /// The largest value added (exact), if any.
    pub fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    /// The `q`-quantile (0 < q ≤ 1): the value of the bucket that holds the
    /// ⌈q·n⌉-th smallest, never above the largest seen.
    pub fn quantile(&self, q: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        let rank = ((q * self.count as f64).ceil() as u64).clamp(1, self.count);
        let mut seen = 0u64;
        for &(b, n) in &self.cells {
            seen += u64::from(n);
            if seen >= rank {
                return Some(middle(b).min(self.max));
            }
        }
        Some(self.max)
    }

    /// How many values are below `v` (counting whole buckets: a bucket
    /// counts when its values are all below `v`).
    pub fn count_below(&self, v: u64) -> u64 {
        self.cells
            .iter()
            .take_while(|(b, _)| bounds(*b).1 <= v)
            .map(|(_, n)| u64::from(*n))
            .sum()
    }

    /// The heap bytes it holds.
    pub fn heap_bytes(&self) -> usize {
        self.cells.capacity() * std::mem::size_of::<(u16, u32)>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_value_falls_in_its_bucket_and_buckets_tile_the_line() {
        let mut next_low = 0;
        for b in 0..=bucket(u64::MAX) {
            let (low, high) = bounds(b);
            assert_eq!(
                low,
                next_low,
                "bucket {b} starts where {} ends",
                b.saturating_sub(1)
            );
            assert!(high > low);
            assert_eq!(bucket(low), b);
            assert_eq!(bucket(high - 1), b);
            next_low = high;
            if high == u64::MAX {
                break;
            }
        }
    }

    #[test]
    fn a_buckets_midpoint_is_within_five_percent_of_its_values() {
        for v in (1..200_000u64).chain([1 << 40, (1 << 40) + 12345, u64::MAX / 3]) {
            let m = middle(bucket(v)) as f64;
            let err = (m - v as f64).abs() / v as f64;
            assert!(err <= 1.0 / 32.0 + 1e-12, "{v}: {m} is {err} off");
        }
    }

    #[test]
    fn quantiles_rank_as_told_and_never_pass_the_max() {
        let mut h = Hist::default();
        assert_eq!(h.quantile(0.5), None);
        for v in 1..=1000 {
            h.add(v);
        }
        assert_eq!(h.count(), 1000);
        assert_eq!(h.max(), Some(1000));
        for (q, want) in [(0.5, 500.0), (0.9, 900.0), (0.99, 990.0), (1.0, 1000.0)] {
            let got = h.quantile(q).unwrap() as f64;
            assert!((got - want).abs() / want <= 0.05, "p{q}: {got} vs {want}");
        }
        let mut one = Hist::default();
        one.add(7_777);
        assert_eq!(
            one.quantile(0.99),
            Some(7_777),
            "the max caps a bucket's midpoint"
        );
    }

    #[test]
    fn merged_histograms_count_both() {
        let (mut a, mut b) = (Hist::default(), Hist::default());
        (0..100).for_each(|v| a.add(v));
        (50..300).for_each(|v| b.add(v * 10));
        let mut both = a.clone();
        both.merge(&b);
        assert_eq!(both.count(), 350);
        assert_eq!(both.max(), Some(2990));
        assert_eq!(both.count_below(100), 100);
        assert_eq!(
            both.sum(),
            (0..100).sum::<u64>() + (50..300u64).map(|v| v * 10).sum::<u64>()
        );
        let listed: u64 = both.buckets().map(|(_, n)| n).sum();
        assert_eq!(listed, 350);
        // Each bound is the last value of its bucket.
        assert!(both
            .buckets()
            .all(|(upper, _)| bucket(upper + 1) == bucket(upper) + 1));
        assert!(both.heap_bytes() >= both.cells.len() * 8);
    }
}
