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

/// Why a head lane is skipped: its own stored state is damaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// Its weight is not an integer.
    Weight,
    /// Its ceiling is not an integer.
    Limit,
    /// Its active count is not an integer, is negative, or would overflow.
    Active,
    /// Its pending key holds another type than a zset.
    PendingType,
}

impl Damage {
    pub fn describe(self) -> &'static str {
        match self {
            Damage::Weight => "its weight is not an integer",
            Damage::Limit => "its limit is not an integer",
            Damage::Active => "its active count is not an integer >= 0 (or would overflow)",
            Damage::PendingType => "its pending key is not a zset",
        }
    }
}

/// A stored number as a claim reads it: absent, an integer, or damaged.
pub type Stored = Result<Option<i64>, ()>;

/// What a claim reads of the lane at the head of the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Head {
    pub name_empty: bool,
    /// `None`: the pending key holds another type.
    pub depth: Option<u64>,
    /// `Ok(None)` for a plain claim, which does not read the weight.
    pub weight: Stored,
    pub limit: Stored,
    pub active: Stored,
    pub paused: bool,
}

/// What one claim turn does with the lane at the head of the ring.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    /// It cannot be served (empty name, empty, paused, no headroom): it leaves
    /// the ring and nothing is served.
    Drop,
    /// Its own state is damaged: it rotates to the tail untouched and nothing
    /// is served.
    Skip(Damage),
    /// Serve up to `k` heads (fewer when some heads are duplicates). The ring
    /// rotates first.
    Serve { k: i64, lane: Lane },
}

/// SPEC "Which lanes a turn serves": one claim turn for the head lane, its
/// checks in the order the seed's `@gwclaim` reads (name, depth, weight,
/// ceiling, active count), the paused test after the depth's.
/// `max_claim` caps the weight (`emq.max-claim`).
pub fn head_turn(head: &Head, max_claim: i64) -> Turn {
    if head.name_empty {
        return Turn::Drop;
    }
    let Some(depth) = head.depth else {
        return Turn::Skip(Damage::PendingType);
    };
    if depth == 0 || head.paused {
        return Turn::Drop;
    }
    let Ok(weight) = head.weight else {
        return Turn::Skip(Damage::Weight);
    };
    let Ok(limit) = head.limit else {
        return Turn::Skip(Damage::Limit);
    };
    let active = match head.active {
        Ok(a) if a.unwrap_or(0) >= 0 => a.unwrap_or(0),
        _ => return Turn::Skip(Damage::Active),
    };
    let k = serve_count(
        effective_weight(weight).min(max_claim.max(1)),
        depth,
        limit,
        active,
    );
    if k <= 0 {
        return Turn::Drop;
    }
    if active.checked_add(k).is_none() {
        return Turn::Skip(Damage::Active);
    }
    Turn::Serve {
        k,
        lane: Lane {
            depth,
            active,
            limit,
            paused: false,
        },
    }
}

/// SPEC "Duplicate ids": the heads of a lane, in ZPOPMIN order, each marked
/// whether it is already leased or dead elsewhere. Up to `k` fresh heads are
/// taken; the duplicates met before the `k`-th fresh one are removed.
/// Returns how many heads are consumed (taken and removed) and how many of
/// them are taken: the fresh ones among the consumed.
pub fn take_heads(k: i64, duplicate: impl IntoIterator<Item = bool>) -> (usize, usize) {
    let mut taken = 0usize;
    let mut consumed = 0;
    for (i, dup) in duplicate.into_iter().enumerate() {
        if taken as i64 >= k {
            break;
        }
        consumed = i + 1;
        if !dup {
            taken += 1;
        }
    }
    (consumed, taken)
}

/// The re-ring guard, run once after a served turn (even one that leased
/// nothing): the lane leaves the ring unless it is still serviceable, with
/// `consumed` heads gone from its pending set and `leased` more active.
pub fn leaves_after(lane: &Lane, consumed: u64, leased: i64) -> bool {
    let after = Lane {
        depth: lane.depth.saturating_sub(consumed),
        active: lane.active.saturating_add(leased),
        ..*lane
    };
    !after.serviceable()
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

    fn head(depth: u64, active: i64, limit: Option<i64>, weight: i64) -> Head {
        Head {
            name_empty: false,
            depth: Some(depth),
            weight: Ok(Some(weight)),
            limit: Ok(limit),
            active: Ok(Some(active)),
            paused: false,
        }
    }

    fn served_k(turn: Turn) -> i64 {
        match turn {
            Turn::Serve { k, .. } => k,
            other => panic!("expected a served turn, got {other:?}"),
        }
    }

    #[test]
    fn the_seeds_worked_example_depth_clamps_the_weight() {
        // weight 5, depth 3, headroom 4 (limit 6, active 2) -> K = 3
        assert_eq!(serve_count(5, 3, Some(6), 2), 3);
        let turn = head_turn(&head(3, 2, Some(6), 5), 1000);
        assert_eq!(served_k(turn), 3);
        // depth 3 is served whole, so the lane leaves the ring.
        assert!(leaves_after(&lane(3, 2, Some(6)), 3, 3));
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
        assert_eq!(served_k(head_turn(&head(9, 0, None, 50), 4)), 4, "emq.max-claim");
    }

    #[test]
    fn lanes_that_cannot_be_served_are_dropped() {
        assert_eq!(
            head_turn(&head(5, 4, Some(4), 3), 1000),
            Turn::Drop,
            "at its ceiling"
        );
        assert_eq!(head_turn(&head(5, 7, Some(4), 3), 1000), Turn::Drop, "past it");
        assert_eq!(head_turn(&head(0, 0, None, 3), 1000), Turn::Drop, "empty");
        assert_eq!(
            head_turn(&head(5, 0, Some(0), 3), 1000),
            Turn::Drop,
            "a ceiling of 0"
        );
        let paused = Head {
            paused: true,
            ..head(5, 0, None, 1)
        };
        assert_eq!(head_turn(&paused, 1000), Turn::Drop, "paused");
        let nameless = Head {
            name_empty: true,
            ..head(5, 0, None, 1)
        };
        assert_eq!(head_turn(&nameless, 1000), Turn::Drop, "an empty name");
    }

    #[test]
    fn a_lane_whose_own_state_is_damaged_is_skipped() {
        let ok = head(5, 1, Some(3), 2);
        assert_eq!(
            head_turn(
                &Head {
                    weight: Err(()),
                    ..ok
                },
                1000
            ),
            Turn::Skip(Damage::Weight)
        );
        assert_eq!(
            head_turn(&Head { limit: Err(()), ..ok }, 1000),
            Turn::Skip(Damage::Limit)
        );
        assert_eq!(
            head_turn(
                &Head {
                    active: Err(()),
                    ..ok
                },
                1000
            ),
            Turn::Skip(Damage::Active)
        );
        assert_eq!(
            head_turn(
                &Head {
                    active: Ok(Some(-3)),
                    ..ok
                },
                1000
            ),
            Turn::Skip(Damage::Active),
            "a negative active count would lease past the ceiling"
        );
        assert_eq!(
            head_turn(&Head { depth: None, ..ok }, 1000),
            Turn::Skip(Damage::PendingType)
        );
        assert_eq!(
            head_turn(&head(3, i64::MAX - 1, None, 5), 1000),
            Turn::Skip(Damage::Active),
            "the count would overflow"
        );
        // Read in the seed's order: an empty name, an empty or paused lane is
        // dropped before the weight is read.
        let both = Head {
            name_empty: true,
            weight: Err(()),
            ..ok
        };
        assert_eq!(head_turn(&both, 1000), Turn::Drop);
        let nameless_wrong_type = Head {
            name_empty: true,
            depth: None,
            ..ok
        };
        assert_eq!(
            head_turn(&nameless_wrong_type, 1000),
            Turn::Drop,
            "a nameless lane is never served, whatever its key holds"
        );
        let empty = Head {
            depth: Some(0),
            limit: Err(()),
            ..ok
        };
        assert_eq!(head_turn(&empty, 1000), Turn::Drop);
    }

    #[test]
    fn duplicates_are_removed_and_fresh_heads_taken() {
        assert_eq!(take_heads(2, [false, false, false]), (2, 2));
        assert_eq!(take_heads(2, [true, false, true, false, false]), (4, 2));
        assert_eq!(
            take_heads(1, [true, true]),
            (2, 0),
            "only duplicates: none leased"
        );
        assert_eq!(take_heads(3, [false]), (1, 1), "fewer heads than K");
        assert_eq!(take_heads(1, [false, true]), (1, 1), "a later duplicate stays");
        assert_eq!(
            take_heads(2, [true, true, false]),
            (3, 1),
            "duplicates before the only fresh one"
        );
    }

    #[test]
    fn the_guard_keeps_a_lane_with_work_and_room() {
        assert!(!leaves_after(&lane(5, 0, None), 2, 2));
        assert!(leaves_after(&lane(5, 0, Some(2)), 2, 2), "reaches its ceiling");
        assert!(!leaves_after(&lane(5, 0, Some(2)), 1, 1));
        assert!(
            leaves_after(&lane(2, 0, None), 2, 0),
            "only duplicates, now empty"
        );
        assert!(
            !leaves_after(&lane(3, 0, None), 2, 0),
            "only duplicates, more left"
        );
        assert!(
            !leaves_after(&lane(5, 0, Some(2)), 2, 1),
            "a duplicate and one lease: still below the ceiling"
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
            served_k(head_turn(&head(3, i64::MAX - 3, None, i64::MAX), i64::MAX)),
            3
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
