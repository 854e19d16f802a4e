//! The scheduling rules over plain numbers: no server, no keys. What a claim
//! serves, when a lane is serviceable, and how the ring follows a change.

/// What the store says about one lane, as numbers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Lane {
    /// Jobs waiting (`ZCARD` of its pending zset).
    pub depth: u64,
    /// Leased jobs (`gactive`; absent = 0).
    pub active: i64,
    /// Concurrency ceiling (`glimit`; absent = none).
    pub limit: Option<i64>,
    pub paused: bool,
}

impl Lane {
    /// SPEC section 1: non-empty, not paused, and below its ceiling if any.
    pub fn serviceable(&self) -> bool {
        self.depth > 0 && !self.paused && self.limit.is_none_or(|lim| self.active < lim)
    }
}

/// The weight a claim uses: a stored weight below 1, or none, is 1.
pub fn effective_weight(stored: Option<i64>) -> i64 {
    match stored {
        Some(w) if w >= 1 => w,
        _ => 1,
    }
}

/// `K = min(weight, depth, headroom)`, headroom being `limit − active` when
/// a ceiling is set. Zero or less means nothing can be served.
pub fn serve_count(weight: i64, depth: u64, limit: Option<i64>, active: i64) -> i64 {
    let depth = i64::try_from(depth).unwrap_or(i64::MAX);
    let mut k = weight.min(depth);
    if let Some(lim) = limit {
        // In i128: a ceiling near i64::MAX and a negative count must not wrap.
        let headroom = i128::from(lim) - i128::from(active);
        k = i128::from(k)
            .min(headroom)
            .clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    }
    k
}

/// What one claim turn does with the lane at the head of the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// Nothing to serve (empty lane, or no headroom): the lane leaves the
    /// ring and the reply is empty.
    Drop,
    /// Serve `k` heads. The ring rotates; afterwards, when `leaves_ring`, the
    /// lane (now at the tail) leaves it: the re-ring guard.
    Serve { k: i64, leaves_ring: bool },
}

/// One claim turn for the rotated lane, exactly as the seed's `@gwclaim`.
/// (The claim does not read `gpaused`: the ring invariant keeps paused lanes
/// out of the ring.)
pub fn claim_turn(weight: i64, lane: &Lane) -> Turn {
    if lane.depth == 0 {
        return Turn::Drop;
    }
    let k = serve_count(weight, lane.depth, lane.limit, lane.active);
    if k <= 0 {
        return Turn::Drop;
    }
    let after = Lane {
        depth: lane.depth - k as u64,
        active: lane.active.saturating_add(k),
        ..*lane
    };
    // The guard tests only emptiness and the ceiling, as the seed's does.
    let leaves_ring = after.depth == 0 || after.limit.is_some_and(|lim| after.active >= lim);
    Turn::Serve { k, leaves_ring }
}

/// How a lane's ring membership follows a change, from its serviceability
/// before and after: the ring invariant without scanning the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingChange {
    /// Became serviceable: `RPUSH` it.
    Join,
    /// Stopped being serviceable: remove it.
    Leave,
    Stay,
}

pub fn ring_change(before: &Lane, after: &Lane) -> RingChange {
    match (before.serviceable(), after.serviceable()) {
        (false, true) => RingChange::Join,
        (true, false) => RingChange::Leave,
        _ => RingChange::Stay,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lane(depth: u64, active: i64, limit: Option<i64>) -> Lane {
        Lane {
            depth,
            active,
            limit,
            paused: false,
        }
    }

    #[test]
    fn the_seeds_worked_example_depth_clamps_the_weight() {
        // weight 5, depth 3, headroom 4 (limit 6, active 2) -> K = 3
        assert_eq!(serve_count(5, 3, Some(6), 2), 3);
        // depth 3 is served whole, so the lane leaves the ring.
        assert_eq!(
            claim_turn(5, &lane(3, 2, Some(6))),
            Turn::Serve {
                k: 3,
                leaves_ring: true
            }
        );
    }

    #[test]
    fn three_lanes_three_weights() {
        // A w1, B w3, C w5 with depth 2 -> 1, 3, 2
        assert_eq!(serve_count(1, 10, None, 0), 1);
        assert_eq!(serve_count(3, 10, None, 0), 3);
        assert_eq!(serve_count(5, 2, None, 0), 2);
    }

    #[test]
    fn each_clamp_can_win() {
        assert_eq!(serve_count(2, 9, Some(9), 0), 2, "weight");
        assert_eq!(serve_count(9, 2, Some(9), 0), 2, "depth");
        assert_eq!(serve_count(9, 9, Some(5), 3), 2, "headroom");
        assert_eq!(serve_count(9, 9, None, 1_000), 9, "no ceiling: active ignored");
    }

    #[test]
    fn no_headroom_drops_the_lane() {
        assert_eq!(claim_turn(3, &lane(5, 4, Some(4))), Turn::Drop);
        assert_eq!(claim_turn(3, &lane(5, 7, Some(4))), Turn::Drop);
        assert_eq!(claim_turn(3, &lane(0, 0, None)), Turn::Drop);
    }

    #[test]
    fn the_guard_keeps_a_lane_with_work_and_room() {
        assert_eq!(
            claim_turn(2, &lane(5, 0, None)),
            Turn::Serve {
                k: 2,
                leaves_ring: false
            }
        );
        assert_eq!(
            claim_turn(2, &lane(5, 0, Some(2))),
            Turn::Serve {
                k: 2,
                leaves_ring: true
            },
            "reaches its ceiling"
        );
        assert_eq!(
            claim_turn(1, &lane(5, 0, Some(2))),
            Turn::Serve {
                k: 1,
                leaves_ring: false
            }
        );
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
            claim_turn(i64::MAX, &lane(3, i64::MAX - 1, None)),
            Turn::Serve {
                k: 3,
                leaves_ring: true
            }
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
        assert!(!idle.serviceable());
        assert!(ready.serviceable());
        assert!(!full.serviceable());
        assert!(!paused.serviceable());
        assert_eq!(ring_change(&idle, &ready), RingChange::Join);
        assert_eq!(ring_change(&ready, &full), RingChange::Leave);
        assert_eq!(ring_change(&ready, &paused), RingChange::Leave);
        assert_eq!(ring_change(&ready, &ready), RingChange::Stay);
        assert_eq!(ring_change(&idle, &paused), RingChange::Stay);
    }
}
