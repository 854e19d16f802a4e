//! A job's row as the rules read it (docs/keyspace.md, "The job row"): its
//! state, its lane, its attempts (the lease token), its stall count — and
//! the decisions that follow from a row alone: whether a lane's head may be
//! leased, whether a returned lease dies of its stalls.

use super::grammar::parse_i64;

/// A job's `state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Pending,
    Active,
    Scheduled,
    Dead,
}

impl State {
    pub fn parse(s: &[u8]) -> Option<State> {
        match s {
            b"pending" => Some(State::Pending),
            b"active" => Some(State::Active),
            b"scheduled" => Some(State::Scheduled),
            b"dead" => Some(State::Dead),
            _ => None,
        }
    }

    pub fn text(self) -> &'static [u8] {
        match self {
            State::Pending => b"pending",
            State::Active => b"active",
            State::Scheduled => b"scheduled",
            State::Dead => b"dead",
        }
    }
}

/// The fields of a row a decision reads (`None`: the field is absent).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RowView<'a> {
    /// The row exists and is a hash.
    pub exists: bool,
    pub state: Option<&'a [u8]>,
    pub group: Option<&'a [u8]>,
    pub attempts: Option<&'a [u8]>,
}

/// Where a stray head of a lane belongs instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Home<'a> {
    /// Nowhere this lane can put it: no row, or a row leased, delayed or
    /// dead (the job is in that set already).
    Elsewhere,
    /// Another lane's pending set: its row says so.
    Lane(&'a [u8]),
    /// The flat queue `P pending`: its row names no lane.
    Flat,
}

/// What a claim does with one head of `lane`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate<'a> {
    /// Lease it: its new attempts (the token).
    Lease(i64),
    /// Not this lane's to lease: out of the lane, to `Home`.
    Stray(Home<'a>),
    /// Its attempts cannot be counted: the lane is damaged.
    Damaged,
}

/// The fate of a head of `lane` whose row reads `row` (docs/damage.md,
/// "Strays"): a row that is missing, leased, delayed or dead, or that names
/// another lane, is never leased from this one (a script would lease it and
/// write a ghost row).
pub fn head_fate<'a>(lane: &[u8], row: &RowView<'a>) -> Fate<'a> {
    if !row.exists {
        return Fate::Stray(Home::Elsewhere);
    }
    if matches!(
        row.state.and_then(State::parse),
        Some(State::Active | State::Scheduled | State::Dead)
    ) {
        return Fate::Stray(Home::Elsewhere);
    }
    match row.group {
        None => Fate::Stray(Home::Flat),
        Some(g) if g != lane => Fate::Stray(Home::Lane(g)),
        Some(_) => match next_attempts(row.attempts) {
            Some(n) => Fate::Lease(n),
            None => Fate::Damaged,
        },
    }
}

/// The fate of a head of the flat queue `P pending` (EMQ.QCLAIM): leased
/// when its row names no lane and is not leased, delayed or dead; a head
/// with no such row is a stray (docs/damage.md, "The flat queue").
pub fn flat_head_fate<'a>(row: &RowView<'a>) -> Fate<'a> {
    match head_fate(b"", &RowView { group: None, ..*row }) {
        Fate::Stray(Home::Flat) => match row.group {
            Some(g) => Fate::Stray(Home::Lane(g)),
            None => match next_attempts(row.attempts) {
                Some(n) => Fate::Lease(n),
                None => Fate::Damaged,
            },
        },
        other => other,
    }
}

/// `HINCRBY attempts 1` of a row whose attempts reads `attempts`: `None`
/// when it is not an integer or would overflow (the script would fail).
pub fn next_attempts(attempts: Option<&[u8]>) -> Option<i64> {
    match attempts {
        None => Some(1),
        Some(a) => parse_i64(a)?.checked_add(1),
    }
}

/// What one returned lease does: whether its stalls are counted and where
/// the count kills it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stalls {
    /// `stalled` + 1 on every return (EchoMQ's sweep, a claim's or the
    /// timer's returns, a stored policy).
    pub count: bool,
    /// The threshold: a job whose count reaches it dies.
    pub max: Option<i64>,
}

/// A returned lease's end: back to pending, or dead of its stalls; and the
/// row's new `stalled` when counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReturnFate {
    Back { stalled: Option<i64> },
    Dies { stalled: i64 },
}

/// The end of a returned lease whose row's `stalled` reads `stalled`. A count
/// that is not an integer >= 0 starts again from 0 (docs/damage.md).
pub fn return_fate(stalled: Option<&[u8]>, stalls: Stalls) -> ReturnFate {
    if !stalls.count {
        return ReturnFate::Back { stalled: None };
    }
    let before = stalled.and_then(parse_i64).filter(|n| *n >= 0).unwrap_or(0);
    let after = before.saturating_add(1);
    match stalls.max {
        Some(max) if after >= max => ReturnFate::Dies { stalled: after },
        _ => ReturnFate::Back { stalled: Some(after) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flat_head_is_leased_only_when_its_row_names_no_lane() {
        let row = |state: Option<&'static [u8]>,
                   group: Option<&'static [u8]>,
                   attempts: Option<&'static [u8]>| RowView {
            exists: true,
            state,
            group,
            attempts,
        };
        assert_eq!(
            flat_head_fate(&row(Some(b"pending"), None, Some(b"0"))),
            Fate::Lease(1)
        );
        assert_eq!(flat_head_fate(&row(None, None, Some(b"4"))), Fate::Lease(5));
        assert_eq!(
            flat_head_fate(&row(Some(b"pending"), Some(b"a"), Some(b"0"))),
            Fate::Stray(Home::Lane(b"a"))
        );
        assert_eq!(
            flat_head_fate(&row(Some(b"active"), None, Some(b"1"))),
            Fate::Stray(Home::Elsewhere)
        );
        assert_eq!(
            flat_head_fate(&row(Some(b"dead"), Some(b"a"), Some(b"1"))),
            Fate::Stray(Home::Elsewhere)
        );
        assert_eq!(
            flat_head_fate(&row(Some(b"pending"), None, Some(b"x"))),
            Fate::Damaged
        );
        let gone = RowView {
            exists: false,
            ..row(None, None, None)
        };
        assert_eq!(flat_head_fate(&gone), Fate::Stray(Home::Elsewhere));
    }

    fn row<'a>(state: Option<&'a str>, group: Option<&'a str>, attempts: Option<&'a str>) -> RowView<'a> {
        RowView {
            exists: true,
            state: state.map(str::as_bytes),
            group: group.map(str::as_bytes),
            attempts: attempts.map(str::as_bytes),
        }
    }

    #[test]
    fn a_pending_row_of_the_lane_is_leased_with_its_next_attempt() {
        assert_eq!(
            head_fate(b"a", &row(Some("pending"), Some("a"), Some("0"))),
            Fate::Lease(1)
        );
        assert_eq!(
            head_fate(b"a", &row(Some("pending"), Some("a"), Some("4"))),
            Fate::Lease(5)
        );
        assert_eq!(
            head_fate(b"a", &row(Some("pending"), Some("a"), None)),
            Fate::Lease(1)
        );
        // A state the rules do not know is no reason to stall the lane.
        assert_eq!(
            head_fate(b"a", &row(Some("??"), Some("a"), Some("0"))),
            Fate::Lease(1)
        );
    }

    #[test]
    fn strays_go_where_their_row_says() {
        let missing = RowView {
            exists: false,
            state: None,
            group: None,
            attempts: None,
        };
        assert_eq!(head_fate(b"a", &missing), Fate::Stray(Home::Elsewhere));
        for state in ["active", "scheduled", "dead"] {
            assert_eq!(
                head_fate(b"a", &row(Some(state), Some("a"), Some("1"))),
                Fate::Stray(Home::Elsewhere),
                "{state}"
            );
        }
        assert_eq!(
            head_fate(b"a", &row(Some("pending"), Some("b"), Some("0"))),
            Fate::Stray(Home::Lane(b"b"))
        );
        assert_eq!(
            head_fate(b"a", &row(Some("pending"), None, Some("0"))),
            Fate::Stray(Home::Flat)
        );
    }

    #[test]
    fn attempts_that_cannot_be_counted_damage_the_lane() {
        assert_eq!(
            head_fate(b"a", &row(Some("pending"), Some("a"), Some("x"))),
            Fate::Damaged
        );
        let max = i64::MAX.to_string();
        assert_eq!(
            head_fate(b"a", &row(Some("pending"), Some("a"), Some(&max))),
            Fate::Damaged
        );
    }

    #[test]
    fn stalls_count_and_kill_at_the_threshold() {
        let none = Stalls {
            count: false,
            max: None,
        };
        assert_eq!(return_fate(Some(b"2"), none), ReturnFate::Back { stalled: None });
        let count = Stalls {
            count: true,
            max: None,
        };
        assert_eq!(return_fate(None, count), ReturnFate::Back { stalled: Some(1) });
        assert_eq!(
            return_fate(Some(b"x"), count),
            ReturnFate::Back { stalled: Some(1) }
        );
        let kill = Stalls {
            count: true,
            max: Some(3),
        };
        assert_eq!(
            return_fate(Some(b"1"), kill),
            ReturnFate::Back { stalled: Some(2) }
        );
        assert_eq!(return_fate(Some(b"2"), kill), ReturnFate::Dies { stalled: 3 });
        assert_eq!(return_fate(Some(b"7"), kill), ReturnFate::Dies { stalled: 8 });
    }

    #[test]
    fn states_read_back_as_written() {
        for s in [State::Pending, State::Active, State::Scheduled, State::Dead] {
            assert_eq!(State::parse(s.text()), Some(s));
        }
        assert_eq!(State::parse(b"PENDING"), None);
    }
}
