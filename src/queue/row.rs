//! A job's row (`P job:<id>`): its state, lane and attempts read in one
//! call, as the decisions of `model::row` need them.

use std::collections::HashSet;

use smallvec::SmallVec;

use crate::ffi::{word, Arg, Key, Kind, RStr, Word};
use crate::model::credit::{Stamp, Stamped};
use crate::model::error::Error;
use crate::model::layout;
use crate::model::row::{RowView, State};

use super::Queue;

/// A row as read: the key, and the fields a transition decides on.
pub struct Row<'q> {
    pub key: Key<'q>,
    /// The key exists and is a hash.
    pub exists: bool,
    pub state: Option<RStr>,
    pub group: Option<RStr>,
    pub attempts: Option<RStr>,
    /// Its stamp while leased under fairness by time (read by the commands
    /// that end a lease).
    pub stamp: Stamped,
}

impl Row<'_> {
    pub fn view(&self) -> RowView<'_> {
        RowView {
            exists: self.exists,
            state: self.state.as_ref().map(RStr::bytes),
            group: self.group.as_ref().map(RStr::bytes),
            attempts: self.attempts.as_ref().map(RStr::bytes),
        }
    }

    pub fn state(&self) -> Option<State> {
        self.state.as_ref().and_then(|s| State::parse(s.bytes()))
    }

    /// The state, read now when the row was read without it
    /// ([`Queue::fenced_row`]).
    pub fn state_now(&self) -> Option<State> {
        match &self.state {
            Some(state) => State::parse(state.bytes()),
            None => self
                .key
                .hash_get(word(Word::State))
                .and_then(|s| State::parse(s.bytes())),
        }
    }

    /// The lane the row names (`group`), if any.
    pub fn lane(&self) -> Option<&[u8]> {
        self.group.as_ref().map(RStr::bytes)
    }
}

impl<'q> Queue<'q> {
    /// The rows of new jobs among `jobs` (`(job, payload)` pairs), each job
    /// once with its first payload: a job whose row exists, or named before
    /// in the call, is a duplicate (as a later pair would find the row the
    /// first wrote). Every row is opened (its permission checked) before the
    /// caller's first write.
    #[allow(clippy::type_complexity)]
    pub fn fresh_rows<'a>(
        &self,
        jobs: &[(Arg<'a>, Arg<'a>)],
    ) -> Result<Vec<(Key<'q>, Arg<'a>, Arg<'a>)>, Error> {
        let mut fresh = Vec::with_capacity(jobs.len());
        // A scan for the handful a call usually names; a hash set beyond.
        let mut seen: HashSet<&[u8]> = HashSet::new();
        let mut met: SmallVec<[&[u8]; 8]> = SmallVec::new();
        for &(job, payload) in jobs {
            let id = job.bytes();
            let again = if jobs.len() > 8 {
                !seen.insert(id)
            } else {
                let again = met.contains(&id);
                met.push(id);
                again
            };
            if again {
                continue;
            }
            let row = self.row_key(id)?;
            if row.kind() == Kind::Empty {
                fresh.push((row, job, payload));
            }
        }
        Ok(fresh)
    }

    /// `P job:<id>`, untyped.
    pub fn row_key(&self, job: &[u8]) -> Result<Key<'q>, Error> {
        self.ctx.key_once(&layout::row_parts(self.prefix_bytes, job))
    }

    /// The row of `job`; `WRONGTYPE` when its key holds another type (what
    /// the script's `HGET` would answer).
    pub fn row(&self, job: &[u8]) -> Result<Row<'q>, Error> {
        let key = self.row_key(job)?.expect(Kind::Hash)?;
        Ok(read(key))
    }

    /// The row of `job`, a key of another type read as no row (a claim's
    /// head: such a key is no job of the lane's).
    pub fn row_or_none(&self, job: &[u8]) -> Result<Row<'q>, Error> {
        Ok(read(self.row_key(job)?))
    }

    /// The row of a command fenced by its token (COMPLETE, RETRY, DELAY,
    /// EXTEND): its lane and attempts. The state is read only when asked
    /// ([`Row::state_now`]): a leased job, the common case, needs none.
    pub fn fenced_row(&self, job: &[u8]) -> Result<Row<'q>, Error> {
        let key = self.row_key(job)?.expect(Kind::Hash)?;
        let [group, attempts, charged] =
            key.hash_get_many([word(Word::Group), word(Word::Attempts), word(Word::Charged)]);
        Ok(Row {
            exists: key.kind() == Kind::Hash,
            stamp: stamp(key, charged),
            key,
            state: None,
            group,
            attempts,
        })
    }

    /// As [`Queue::row_or_none`], for a sweep that decides on the state and
    /// the lane alone: `attempts` is not read (a field less per job).
    pub fn row_place(&self, job: &[u8]) -> Result<Row<'q>, Error> {
        let key = self.row_key(job)?;
        let [state, group] = key.hash_get_many([word(Word::State), word(Word::Group)]);
        Ok(Row {
            exists: key.kind() == Kind::Hash,
            key,
            state,
            group,
            attempts: None,
            stamp: None,
        })
    }

    /// As [`Queue::row_place`], for a lease that ends: its stamp too.
    pub fn row_ending(&self, job: &[u8]) -> Result<Row<'q>, Error> {
        let key = self.row_key(job)?;
        let [state, group, charged] =
            key.hash_get_many([word(Word::State), word(Word::Group), word(Word::Charged)]);
        Ok(Row {
            exists: key.kind() == Kind::Hash,
            stamp: stamp(key, charged),
            key,
            state,
            group,
            attempts: None,
        })
    }
}

fn read(key: Key) -> Row {
    let exists = key.kind() == Kind::Hash;
    let [state, group, attempts] =
        key.hash_get_many([word(Word::State), word(Word::Group), word(Word::Attempts)]);
    Row {
        key,
        exists,
        state,
        group,
        attempts,
        stamp: None,
    }
}

/// The row's stamp under fairness by time: `claimed` is read only when
/// `charged` is there (a lease no time turn granted costs one field).
fn stamp(key: Key, charged: Option<RStr>) -> Stamped {
    let charged = charged?;
    let claimed = key.hash_get(word(Word::Claimed));
    Some(Stamp::parse(claimed.as_ref().map(RStr::bytes), Some(charged.bytes())).ok_or(()))
}
