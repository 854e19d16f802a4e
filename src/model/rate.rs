//! A lane's rate as numbers (docs/commands.md, "EMQ.RATE"): the generic cell
//! rate algorithm. A rate of `n` starts per `period_ms` spaces starts by the
//! emission interval `T = ⌈period_ms·1000 / n⌉` µs and lets a lane run up to
//! `burst` of them early; its only state is the theoretical arrival time
//! (TAT, µs). Over any interval of length `t` a lane starts at most
//! `burst + t/T ≤ burst + t·n/period_ms` jobs, however many claim at once.
//! No server here: the claim turn reads the stored text and the clock and
//! asks.

/// `"<n> <period_ms> <burst>"`, each at least 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub n: i64,
    pub period_ms: i64,
    pub burst: i64,
}

/// The largest period and count a rate takes: the arithmetic in µs then
/// stays far inside an i64 (a year, a billion).
pub const PERIOD_MAX_MS: i64 = 365 * 24 * 3_600_000;
pub const N_MAX: i64 = 1_000_000_000;

impl Rate {
    /// A rate, if every number is in range.
    pub fn new(n: i64, period_ms: i64, burst: i64) -> Option<Rate> {
        let ok = (1..=N_MAX).contains(&n)
            && (1..=PERIOD_MAX_MS).contains(&period_ms)
            && (1..=N_MAX).contains(&burst);
        ok.then_some(Rate { n, period_ms, burst })
    }

    /// The stored text, as [`Rate::format`] writes it; `None` when damaged.
    /// Read on every turn of a rated lane: by hand, without allocating.
    pub fn parse(text: &[u8]) -> Option<Rate> {
        let mut numbers = [0i64; 3];
        let mut parts = text.split(|&b| b == b' ');
        for slot in &mut numbers {
            let part = parts.next()?;
            // Digits only: no sign, no padding (what `format` writes).
            if part.is_empty() || part.len() > 18 || !part.iter().all(u8::is_ascii_digit) {
                return None;
            }
            *slot = part.iter().fold(0i64, |n, d| n * 10 + i64::from(d - b'0'));
        }
        if parts.next().is_some() {
            return None;
        }
        Rate::new(numbers[0], numbers[1], numbers[2])
    }

    pub fn format(&self) -> String {
        format!("{} {} {}", self.n, self.period_ms, self.burst)
    }

    /// The emission interval `T` in µs, rounded up: never more starts than
    /// the rate.
    pub fn interval_us(&self) -> i64 {
        (self.period_ms * 1000 + self.n - 1) / self.n
    }

    /// How many starts the rate allows at `now_us`, given the stored TAT.
    pub fn allowed(&self, tat_us: Option<i64>, now_us: i64) -> i64 {
        let t = i128::from(self.interval_us());
        let tat = i128::from(tat_us.unwrap_or(now_us).max(now_us));
        let room = i128::from(now_us) + i128::from(self.burst) * t - tat;
        (room.div_euclid(t)).clamp(0, i128::from(self.burst)) as i64
    }

    /// The TAT after `k` starts at `now_us`.
    pub fn after(&self, tat_us: Option<i64>, now_us: i64, k: i64) -> i64 {
        let tat = tat_us.unwrap_or(now_us).max(now_us);
        tat.saturating_add(k.saturating_mul(self.interval_us()))
    }

    /// The TAT under the rate `to` for the debt a lane owes under this one
    /// at `now_us`: the same number of starts owed (rounded up), up to
    /// `to`'s burst (the most its own GCRA ever owes), paid at `to`'s pace.
    /// Keeping the TAT as a time instead would let a lane that spent its
    /// burst under a fast rate spend most of a slow rate's burst at once.
    /// No debt (a TAT not after now) stays as it is.
    pub fn carry(&self, to: &Rate, tat_us: i64, now_us: i64) -> i64 {
        if tat_us <= now_us {
            return tat_us;
        }
        let to_t = i128::from(to.interval_us());
        let from = i128::from(self.interval_us());
        let owed = (i128::from(tat_us - now_us) * to_t + from - 1) / from;
        let debt = owed.min(i128::from(to.burst) * to_t);
        now_us.saturating_add(i64::try_from(debt).unwrap_or(i64::MAX))
    }

    /// The first ms at which the rate allows a start again, given a TAT.
    pub fn next_start_ms(&self, tat_us: i64) -> i64 {
        let start_us = tat_us.saturating_sub((self.burst - 1).saturating_mul(self.interval_us()));
        start_us.div_euclid(1000) + i64::from(start_us.rem_euclid(1000) != 0)
    }
}

/// A stored TAT: an integer of µs; `None` when damaged.
pub fn parse_tat(text: &[u8]) -> Option<i64> {
    super::grammar::parse_i64(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_what_it_formats_and_nothing_else() {
        let r = Rate::new(20, 1000, 5).unwrap();
        assert_eq!(Rate::parse(r.format().as_bytes()), Some(r));
        for bad in [
            "",
            "20",
            "20 1000",
            "20 1000 5 1",
            "0 1000 5",
            "20 0 5",
            "20 1000 0",
            "-1 1000 5",
            "20 1000 +5",
            "20  1000 5",
            " 20 1000 5",
            "20 1000 x",
            "20 1000 5 ",
        ] {
            assert_eq!(Rate::parse(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(Rate::new(1, PERIOD_MAX_MS + 1, 1), None);
        assert_eq!(Rate::new(N_MAX + 1, 1000, 1), None);
    }

    #[test]
    fn interval_rounds_up() {
        assert_eq!(Rate::new(20, 1000, 1).unwrap().interval_us(), 50_000);
        assert_eq!(Rate::new(3, 1000, 1).unwrap().interval_us(), 333_334);
        assert_eq!(Rate::new(N_MAX, 1, 1).unwrap().interval_us(), 1);
    }

    #[test]
    fn a_fresh_lane_has_its_burst_then_one_per_interval() {
        let r = Rate::new(20, 1000, 5).unwrap();
        let now = 1_000_000_000;
        assert_eq!(r.allowed(None, now), 5);
        let tat = r.after(None, now, 5);
        assert_eq!(r.allowed(Some(tat), now), 0);
        // The next start: one interval after now.
        assert_eq!(r.next_start_ms(tat), now / 1000 + 50);
        assert_eq!(r.allowed(Some(tat), now + 49_999), 0);
        assert_eq!(r.allowed(Some(tat), now + 50_000), 1);
        // Idle long enough, the whole burst again, no more.
        assert_eq!(r.allowed(Some(tat), now + 10_000_000), 5);
    }

    #[test]
    fn a_new_rate_carries_the_starts_owed_not_the_time() {
        let now = 1_000_000_000;
        let fast = Rate::new(1000, 1000, 1000).unwrap();
        let slow = Rate::new(1, 1000, 1000).unwrap();
        // The fast burst spent: 1000 starts owed, a second of them.
        let tat = fast.after(None, now, 1000);
        assert_eq!(fast.allowed(Some(tat), now), 0);
        // Under the slow rate the same 1000 starts are owed: none now, the
        // next a second on, not 999 at once.
        let carried = fast.carry(&slow, tat, now);
        assert_eq!(slow.allowed(Some(carried), now), 0);
        assert_eq!(slow.next_start_ms(carried), now / 1000 + 1000);
        // Back to the fast rate: the debt it had.
        assert_eq!(slow.carry(&fast, carried, now), tat);
        // One start owed at 1 per 3 s is one owed at 100 per s, not 3 s.
        let strict = Rate::new(1, 3000, 1).unwrap();
        let loose = Rate::new(100, 1000, 100).unwrap();
        let tat = strict.after(None, now, 1);
        assert_eq!(loose.allowed(Some(strict.carry(&loose, tat, now)), now), 99);
        // Owed a part of a start: rounded up, never more starts.
        assert_eq!(Rate::new(3, 1000, 1).unwrap().carry(&fast, now + 1, now), now + 1);
        // No debt: the TAT as it is.
        assert_eq!(fast.carry(&slow, now - 5, now), now - 5);
        // Owed more than the new burst: its burst spent, no more (the next
        // start one interval on, not a start per owed one).
        let minute = Rate::new(1, 60_000, 1).unwrap();
        let carried = fast.carry(&minute, fast.after(None, now, 1000), now);
        assert_eq!(carried, now + 60_000_000);
        assert_eq!(minute.next_start_ms(carried), now / 1000 + 60_000);
        // The largest figures stay in range.
        let max = Rate::new(1, PERIOD_MAX_MS, N_MAX).unwrap();
        let min = Rate::new(N_MAX, 1, 1).unwrap();
        let owed = max.after(None, now, N_MAX);
        assert_eq!(min.carry(&max, owed, now), owed);
        assert_eq!(max.carry(&min, owed, now), now + 1);
    }

    #[test]
    fn partial_use_leaves_the_rest() {
        let r = Rate::new(10, 1000, 4).unwrap();
        let now = 5_000_000;
        let tat = r.after(None, now, 1);
        assert_eq!(r.allowed(Some(tat), now), 3);
        let tat = r.after(Some(tat), now, 3);
        assert_eq!(r.allowed(Some(tat), now), 0);
    }

    #[test]
    fn next_start_is_the_first_ms_allowed() {
        let r = Rate::new(3, 1000, 2).unwrap();
        let now = 7_000_000;
        let tat = r.after(None, now, 2);
        let next = r.next_start_ms(tat);
        assert_eq!(r.allowed(Some(tat), next * 1000), 1);
        assert_eq!(r.allowed(Some(tat), next * 1000 - 1000), 0);
    }
}
