//! The store's bounds (`store.rs`): at most `emq.stats-lanes` lanes, the
//! lane recorded to longest ago dropped first, and the leases of the oldest
//! turns past theirs; what the drops free given back.

use rustc_hash::FxHashMap as HashMap;

use super::{Store, LEASES_PER_LANE, LEASE_FLOOR};

impl Store {
    /// Keeps within `cap` (`emq.stats-lanes`, perhaps just lowered; 0 forgets
    /// everything): what a read does before it reads.
    pub fn keep_within(&mut self, cap: usize) {
        if cap == 0 {
            // No lane; the leases of queues under fairness by time only.
            for q in self.queues.values_mut().filter(|q| !q.time) {
                self.leases -= q.leases.len();
                q.leases = HashMap::default();
                q.turns = Vec::new();
                q.free = Vec::new();
            }
        }
        self.bound(cap);
        if self.lanes == 0 && self.leases == 0 {
            self.clear();
        }
    }

    /// Keeps within `cap` lanes and `max(cap, 10,000) × LEASES_PER_LANE`
    /// leases, dropping a sixty-fourth more at once so that the scan is paid
    /// rarely. Inline: on a turn, two comparisons; the drops out of line.
    #[inline]
    pub(super) fn bound(&mut self, cap: usize) {
        if self.lanes > cap || self.leases > lease_cap(cap) {
            self.drop_past(cap);
        }
    }

    #[cold]
    #[inline(never)]
    fn drop_past(&mut self, cap: usize) {
        if self.lanes > cap {
            let drop = self.lanes - cap + cap / 64;
            self.drop_idlest(drop);
        }
        let lease_cap = lease_cap(cap);
        if self.leases > lease_cap {
            let drop = self.leases - lease_cap + lease_cap / 64;
            self.drop_oldest_leases(drop);
        }
    }

    /// Drops the `n` lanes recorded to longest ago; a queue left with no
    /// lane and no lease goes too.
    fn drop_idlest(&mut self, n: usize) {
        let times = self
            .queues
            .values()
            .flat_map(|q| q.lanes.values().map(|t| t.last_ms));
        let Some(mut oldest) = Oldest::of(times.collect(), n) else {
            return;
        };
        for q in self.queues.values_mut() {
            q.lanes.retain(|_, t| !oldest.goes(t.last_ms));
        }
        self.lanes -= oldest.n;
        self.drop_empty_queues();
    }

    /// Drops the `n` leases of the oldest turns (their jobs will end
    /// uncounted).
    fn drop_oldest_leases(&mut self, n: usize) {
        let claimed = self
            .queues
            .values()
            .flat_map(|q| q.leases.values().map(|i| q.turns[*i as usize].claimed_ms));
        let Some(mut oldest) = Oldest::of(claimed.collect(), n) else {
            return;
        };
        for q in self.queues.values_mut() {
            let gone: Vec<(u64, u32)> = q
                .leases
                .iter()
                .filter(|(_, i)| oldest.goes(q.turns[**i as usize].claimed_ms))
                .map(|(k, i)| (*k, *i))
                .collect();
            for (job, i) in gone {
                q.leases.remove(&job);
                q.close(i);
            }
        }
        self.leases -= oldest.n;
        self.drop_empty_queues();
    }

    /// Drops the queues left with no lane and no lease, and gives back the
    /// room the drops left (a bound lowered frees its memory).
    fn drop_empty_queues(&mut self) {
        self.queues
            .retain(|_, q| !q.lanes.is_empty() || !q.leases.is_empty());
        for q in self.queues.values_mut() {
            if q.lanes.len() * 4 < q.lanes.capacity() {
                q.lanes.shrink_to_fit();
            }
            if q.leases.len() * 4 < q.leases.capacity() {
                q.leases.shrink_to_fit();
            }
        }
        if self.queues.len() * 4 < self.queues.capacity() {
            self.queues.shrink_to_fit();
        }
    }
}

/// The most leases kept under a bound of `cap` lanes.
fn lease_cap(cap: usize) -> usize {
    cap.max(LEASE_FLOOR).saturating_mul(LEASES_PER_LANE)
}

/// The `n` oldest of some times: every one before the cutoff, and as many at
/// it as make `n` (asked in any order, each once).
struct Oldest {
    n: usize,
    cutoff: i64,
    at_cutoff: usize,
}

impl Oldest {
    fn of(mut times: Vec<i64>, n: usize) -> Option<Oldest> {
        let n = n.min(times.len());
        if n == 0 {
            return None;
        }
        let (_, cutoff, _) = times.select_nth_unstable(n - 1);
        let cutoff = *cutoff;
        let below = times.iter().filter(|t| **t < cutoff).count();
        Some(Oldest {
            n,
            cutoff,
            at_cutoff: n - below,
        })
    }

    /// Whether the time `t` is among them.
    fn goes(&mut self, t: i64) -> bool {
        if t < self.cutoff {
            return true;
        }
        if t == self.cutoff && self.at_cutoff > 0 {
            self.at_cutoff -= 1;
            return true;
        }
        false
    }
}
