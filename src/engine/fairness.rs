//! Fairness by time where a lease ends (SPEC section 10; docs/commands.md,
//! "EMQ.POLICY"): a job leased by a turn under fairness by time carries its
//! stamp in its row (`claimed`, `charged`); when its lease ends — COMPLETE,
//! RETRY, DELAY, its return when expired, its death — the time it used
//! corrects its lane's credit (`credit −= used − charged`) and moves its
//! cost, and the stamp goes. The time a job used runs from its turn's
//! previous end (the figures keep the turns, `figures.rs`); a lease they do
//! not know (after a failover or a restart) is charged from its turn's
//! claim. The writes replicate as their effects whatever the mode: a replica
//! or an AOF load knows neither the clock nor the turns, and does nothing of
//! its own.

use crate::ffi::{word, Key, Word};
use crate::model::credit::{self, Stamp};
use crate::model::error::{quote, Error};
use crate::queue::{stored_int, Queue};

/// The keys a correction writes, opened and type-checked before a
/// command's first write (one of another type refuses the command).
pub fn check(q: &Queue, stamp: Option<Stamp>) -> Result<(), Error> {
    if stamp.is_some() && q.call.records() {
        q.credits()?;
        q.costs()?;
    }
    Ok(())
}

/// The lease of a job of `lane` stamped `stamp` ended at `end_ms`; `used` is
/// what the figures measured from its turn's previous end, if they knew the
/// lease; `row`, when the row stays, loses its stamp. A lane whose credit
/// or cost is damaged is left as it is (logged): the lease's end matters
/// more than its lane's share.
pub fn lease_ended(
    q: &Queue,
    lane: &[u8],
    row: Option<Key>,
    stamp: Option<Stamp>,
    end_ms: i64,
    used: Option<u64>,
) {
    let Some(stamp) = stamp else { return };
    if !q.call.records() {
        return;
    }
    let (Ok(credits), Ok(costs)) = (q.credits(), q.costs()) else {
        return; // checked before the first write: unreachable
    };
    let name = q.ctx.string(lane);
    let (credit, cost) = match (
        stored_int(credits, name.as_arg(), "credit of lane"),
        stored_int(costs, name.as_arg(), "cost of lane"),
    ) {
        (Ok(credit), Ok(cost)) => (credit.unwrap_or(0), cost),
        (Err(e), _) | (_, Err(e)) => {
            q.report(|| {
                format!(
                    "lane '{}': its charge is not corrected: {}",
                    quote(lane),
                    e.message().unwrap_or_default()
                )
            });
            return;
        }
    };
    let used = used.unwrap_or_else(|| stamp.used_since_claim(end_ms));
    let quantum_cost = cost.unwrap_or(stamp.charged);
    let credit = q
        .ctx
        .string_from_i64(credit::correct(credit, used, stamp.charged));
    let cost = q.ctx.string_from_i64(credit::next_cost(quantum_cost, used));
    q.call.repl.forced(|| {
        q.hset(credits, &[(name.as_arg(), credit.as_arg())], c"hset");
        q.hset(costs, &[(name.as_arg(), cost.as_arg())], c"hset");
        if let Some(row) = row {
            q.hdel(row, &[word(Word::Claimed), word(Word::Charged)]);
        }
    });
}
