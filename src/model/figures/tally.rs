//! The figures of one lane (or of a whole queue): turns, jobs, the clamp of
//! each turn, waits, busy time and leases ended, as a total since load and
//! over a sliding window kept in ten slots (SPEC section 8: the window at a
//! resolution of a tenth of it). Only the slots inside the window are kept.

use crate::model::schedule::Clamp;

use super::hist::Hist;

/// Slots to a window.
pub const SLOTS: u64 = 10;

/// One set of figures.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Figures {
    pub turns: u64,
    pub jobs: u64,
    /// Turns by the clamp that decided them, in [`Clamp::ALL`]'s order.
    pub clamps: [u64; 6],
    pub waits: Hist,
    pub busy_ms: u64,
    pub leases_ended: u64,
}

impl Figures {
    fn turn(&mut self, clamp: Clamp, jobs: u64) {
        self.turns += 1;
        self.jobs += jobs;
        self.clamps[clamp as usize] += 1;
    }

    fn ended(&mut self, used_ms: u64) {
        self.leases_ended += 1;
        self.busy_ms = self.busy_ms.saturating_add(used_ms);
    }

    /// Adds `other` in.
    pub fn merge(&mut self, other: &Figures) {
        self.merge_counts(other);
        self.waits.merge(&other.waits);
    }

    /// Adds `other`'s counts in, not its waits.
    pub fn merge_counts(&mut self, other: &Figures) {
        self.turns += other.turns;
        self.jobs += other.jobs;
        for (a, b) in self.clamps.iter_mut().zip(other.clamps) {
            *a += b;
        }
        self.busy_ms = self.busy_ms.saturating_add(other.busy_ms);
        self.leases_ended += other.leases_ended;
    }

    pub fn clamp(&self, clamp: Clamp) -> u64 {
        self.clamps[clamp as usize]
    }

    fn heap_bytes(&self) -> usize {
        self.waits.heap_bytes()
    }
}

/// A slot of the window: the figures recorded in one tenth of it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Slot {
    /// `now / slot_ms` when it was recorded.
    index: i64,
    figures: Figures,
}

/// A lane's (or a queue's) figures: the total, the window's slots, and when
/// it was last recorded to (the lane idle longest is dropped first).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    pub total: Figures,
    slots: Vec<Slot>,
    pub last_ms: i64,
}

/// Where the window stands: the clock and the width of a slot (ms).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Clock {
    pub now_ms: i64,
    pub slot_ms: i64,
}

impl Clock {
    /// The clock for a window of `window_ms` (its slot a tenth of it).
    pub fn new(now_ms: i64, window_ms: i64) -> Clock {
        Clock {
            now_ms,
            slot_ms: (window_ms / SLOTS as i64).max(1),
        }
    }

    fn index(&self) -> i64 {
        self.now_ms.div_euclid(self.slot_ms)
    }

    /// Whether slot `index` lies inside the window that ends now.
    fn holds(&self, index: i64) -> bool {
        let now = self.index();
        index <= now && index > now - SLOTS as i64
    }
}

impl Tally {
    /// The slot of now, made when missing (then the slots outside the
    /// window go).
    fn slot(&mut self, clock: Clock) -> &mut Figures {
        self.last_ms = self.last_ms.max(clock.now_ms);
        let index = clock.index();
        // Most records fall in the newest slot.
        let at = match self.slots.iter().rposition(|s| s.index == index) {
            Some(at) => at,
            None => {
                self.slots.retain(|s| clock.holds(s.index));
                // One at a time: a lane served now and then keeps one slot.
                self.slots.reserve_exact(1);
                self.slots.push(Slot {
                    index,
                    figures: Figures::default(),
                });
                self.slots.len() - 1
            }
        };
        &mut self.slots[at].figures
    }

    /// A turn decided by `clamp` that served `jobs`.
    pub fn turn(&mut self, clock: Clock, clamp: Clamp, jobs: u64) {
        self.total.turn(clamp, jobs);
        self.slot(clock).turn(clamp, jobs);
    }

    /// A job claimed for the first time, `wait_ms` after it was minted.
    pub fn wait(&mut self, clock: Clock, wait_ms: u64) {
        self.total.waits.add(wait_ms);
        self.slot(clock).waits.add(wait_ms);
    }

    /// A lease ended, its job having used `used_ms` of worker time.
    pub fn ended(&mut self, clock: Clock, used_ms: u64) {
        self.total.ended(used_ms);
        self.slot(clock).ended(used_ms);
    }

    /// The window's figures: its slots summed.
    pub fn window(&self, clock: Clock) -> Figures {
        let mut sum = Figures::default();
        self.add_window(clock, &mut sum, true);
        sum
    }

    /// Adds the window's figures into `sum` (its waits too when `waits`).
    pub fn add_window(&self, clock: Clock, sum: &mut Figures, waits: bool) {
        for s in self.slots.iter().filter(|s| clock.holds(s.index)) {
            match waits {
                true => sum.merge(&s.figures),
                false => sum.merge_counts(&s.figures),
            }
        }
    }

    /// The window's jobs alone (no histogram summed).
    pub fn window_jobs(&self, clock: Clock) -> u64 {
        self.slots
            .iter()
            .filter(|s| clock.holds(s.index))
            .map(|s| s.figures.jobs)
            .sum()
    }

    /// The heap bytes it holds.
    pub fn heap_bytes(&self) -> usize {
        self.total.heap_bytes()
            + self.slots.capacity() * std::mem::size_of::<Slot>()
            + self.slots.iter().map(|s| s.figures.heap_bytes()).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(now_ms: i64) -> Clock {
        Clock::new(now_ms, 60_000)
    }

    #[test]
    fn a_tally_counts_turns_jobs_clamps_waits_and_busy_time() {
        let mut t = Tally::default();
        t.turn(at(0), Clamp::Weight, 3);
        t.turn(at(10), Clamp::Depth, 1);
        t.turn(at(20), Clamp::Ceiling, 0);
        t.wait(at(20), 1500);
        t.ended(at(30), 300);
        t.ended(at(40), 200);
        let w = t.window(at(50));
        assert_eq!((w.turns, w.jobs), (3, 4));
        assert_eq!(
            [Clamp::Weight, Clamp::Depth, Clamp::Ceiling, Clamp::Rate].map(|c| w.clamp(c)),
            [1, 1, 1, 0]
        );
        assert_eq!((w.busy_ms, w.leases_ended), (500, 2));
        assert_eq!(w.waits.max(), Some(1500));
        assert_eq!(w, t.total, "all of it inside the window");
        assert_eq!(t.last_ms, 40);
    }

    #[test]
    fn the_window_slides_a_tenth_at_a_time_and_the_total_stays() {
        let mut t = Tally::default();
        t.turn(at(0), Clamp::Weight, 5); // slot 0 (0..6000)
        t.turn(at(30_000), Clamp::Weight, 2); // slot 5
        assert_eq!(t.window(at(59_999)).jobs, 7, "slot 0 still inside");
        assert_eq!(t.window_jobs(at(59_999)), 7);
        assert_eq!(t.window_jobs(at(60_000)), 2);
        assert_eq!(t.window(at(60_000)).jobs, 2, "slot 0 slid out");
        assert_eq!(t.window(at(89_999)).jobs, 2);
        assert_eq!(t.window(at(90_000)).jobs, 0, "slot 5 slid out");
        assert_eq!(t.total.jobs, 7);
        // Recording drops the slots gone by: at most ten are kept.
        for i in 0..50 {
            t.turn(at(i * 6_000), Clamp::Depth, 1);
        }
        assert!(t.slots.len() <= SLOTS as usize);
        assert_eq!(t.window(at(49 * 6_000)).jobs, 10);
    }

    #[test]
    fn a_window_of_less_than_ten_ms_keeps_slots_of_one() {
        let clock = Clock::new(12_345, 5);
        assert_eq!(clock.slot_ms, 1);
        let mut t = Tally::default();
        t.turn(clock, Clamp::One, 1);
        assert_eq!(t.window(clock).jobs, 1);
    }
}
