//! The tests' seeded generator: proptest's own (`rand_xorshift`, through
//! `rand`), behind the few draws the tests make, so every random test is
//! replayable from the seed it prints.

use rand::seq::SliceRandom;
use rand::{RngExt, SeedableRng};
use rand_xorshift::XorShiftRng;

pub struct Rng(XorShiftRng);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(XorShiftRng::seed_from_u64(seed))
    }

    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.random_range(0..n)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        self.0.random_range(lo..=hi)
    }

    /// True with probability `num / den`.
    pub fn chance(&mut self, num: u32, den: u32) -> bool {
        self.0.random_ratio(num, den)
    }

    pub fn shuffle<T>(&mut self, v: &mut [T]) {
        v.shuffle(&mut self.0);
    }
}
