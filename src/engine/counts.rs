//! EchoMQ's queue counters, `P metrics:completed` and `P metrics:failed`
//! (field `count`), read and checked before a command writes, raised after.

use crate::ffi::{word, Key, Word};
use crate::model::error::{Error, INTEGER};
use crate::model::grammar::parse_i64;
use crate::model::layout::{field, Fixed};
use crate::queue::Queue;

/// A counter as read: its key and its value now.
pub struct Metric<'q> {
    key: Key<'q>,
    now: i64,
}

pub fn completed_count<'q>(q: &Queue<'q>) -> Result<Metric<'q>, Error> {
    metric(q, Fixed::Completed)
}

pub fn failed_count<'q>(q: &Queue<'q>) -> Result<Metric<'q>, Error> {
    metric(q, Fixed::Failed)
}

fn metric<'q>(q: &Queue<'q>, which: Fixed) -> Result<Metric<'q>, Error> {
    let key = q.fixed(which, crate::ffi::Kind::Hash)?;
    let now = match key.hash_get(word(Word::Count)) {
        None => 0,
        Some(v) => parse_i64(v.bytes())
            .ok_or_else(|| Error::bad_stored("count", field::COUNT, key.name().bytes(), INTEGER))?,
    };
    Ok(Metric { key, now })
}

impl Metric<'_> {
    /// `HINCRBY key count n` (nothing for 0).
    pub fn add(&self, q: &Queue, n: i64) {
        if n == 0 {
            return;
        }
        let v = q.ctx.string_from_i64(self.now.saturating_add(n));
        q.hset(self.key, &[(word(Word::Count), v.as_arg())], c"hincrby");
    }
}
