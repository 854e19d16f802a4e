//! EchoMQ's queue counters, `P metrics:completed` and `P metrics:failed`
//! (field `count`), read and checked before a command writes, raised after:
//! a count the raise would take past the largest integer refuses the
//! command whole, where the script's `HINCRBY` fails it halfway.

use crate::ffi::{word, Key, Word};
use crate::model::error::{Error, INTEGER};
use crate::model::grammar::parse_i64;
use crate::model::layout::{field, Fixed};
use crate::queue::Queue;

/// A counter as read and checked: its key and its value after the raise.
pub struct Metric<'q> {
    key: Key<'q>,
    n: i64,
    after: i64,
}

/// `P metrics:completed`, to be raised by `n`.
pub fn completed_count<'q>(q: &Queue<'q>, n: i64) -> Result<Metric<'q>, Error> {
    metric(q, Fixed::Completed, n)
}

/// `P metrics:failed`, to be raised by `n`.
pub fn failed_count<'q>(q: &Queue<'q>, n: i64) -> Result<Metric<'q>, Error> {
    metric(q, Fixed::Failed, n)
}

fn metric<'q>(q: &Queue<'q>, which: Fixed, n: i64) -> Result<Metric<'q>, Error> {
    let key = q.fixed(which, crate::ffi::Kind::Hash)?;
    let now = match key.hash_get(word(Word::Count)) {
        None => 0,
        Some(v) => parse_i64(v.bytes())
            .ok_or_else(|| Error::bad_stored("count", field::COUNT, key.name().bytes(), INTEGER))?,
    };
    let after = now.checked_add(n).ok_or_else(|| Error::Overflow {
        what: "count",
        field: field::COUNT.to_vec(),
        key: key.name().bytes().to_vec(),
    })?;
    Ok(Metric { key, n, after })
}

impl Metric<'_> {
    /// `HINCRBY key count n`: the raise checked when read (nothing for 0).
    pub fn add(&self, q: &Queue) {
        if self.n == 0 {
            return;
        }
        let v = q.ctx.string_from_i64(self.after);
        q.hset(self.key, &[(word(Word::Count), v.as_arg())], c"hincrby");
    }
}
