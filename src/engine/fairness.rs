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

use crate::ffi::{word, Key, RStr, Word};
use crate::model::credit::{self, Stamp, Stamped};
use crate::model::error::{quote, Error};
use crate::queue::{stored_int, Queue};

/// The keys a correction writes (`correcting`: a lease with a sound stamp
/// ends), opened and type-checked before a command's first write (one of
/// another type refuses the command).
pub fn check(q: &Queue, correcting: bool) -> Result<(), Error> {
    if correcting && q.call.records() {
        q.credits()?;
        q.costs()?;
    }
    Ok(())
}

/// The lease of a job of `lane` stamped `stamp` ended at `end_ms`; `used` is
/// what the figures measured from its turn's previous end, if they knew the
/// lease; `row`, when the row stays, loses its stamp whatever it holds. A
/// damaged stamp, or a lane whose credit or cost is damaged, corrects
/// nothing (logged): the lease's end matters more than its lane's share.
pub fn lease_ended(q: &Queue, lane: &[u8], row: Option<Key>, stamp: Stamped, end_ms: i64, used: Option<u64>) {
    if stamp.is_none() || !q.call.records() {
        return;
    }
    let unstamp = || {
        if let Some(row) = row {
            q.call
                .repl
                .forced(|| q.hdel(row, &[word(Word::Claimed), word(Word::Charged)]));
        }
    };
    let correction = match stamp {
        Some(Ok(stamp)) => correction(q, lane, stamp, end_ms, used),
        _ => Err("its stamp (claimed, charged) is damaged".to_string()),
    };
    match correction {
        Ok((credits, costs, name, credit, cost)) => q.call.repl.forced(|| {
            q.hset(credits, &[(name.as_arg(), credit.as_arg())], c"hset");
            q.hset(costs, &[(name.as_arg(), cost.as_arg())], c"hset");
        }),
        Err(why) => q.report(|| format!("lane '{}': a lease's charge is not corrected: {why}", quote(lane))),
    }
    unstamp();
}

/// What a sound stamp's end writes: the lane's new credit and cost.
#[allow(clippy::type_complexity)]
fn correction<'q>(
    q: &Queue<'q>,
    lane: &[u8],
    stamp: Stamp,
    end_ms: i64,
    used: Option<u64>,
) -> Result<(Key<'q>, Key<'q>, RStr, RStr, RStr), String> {
    let (Ok(credits), Ok(costs)) = (q.credits(), q.costs()) else {
        return Err("its keys cannot be opened".to_string()); // checked first: unreachable
    };
    let name = q.ctx.string(lane);
    let message = |e: Error| e.message().unwrap_or_default();
    let credit = stored_int(credits, name.as_arg(), "credit of lane").map_err(message)?;
    let cost = stored_int(costs, name.as_arg(), "cost of lane").map_err(message)?;
    let used = used.unwrap_or_else(|| stamp.used_since_claim(end_ms));
    let credit = q
        .ctx
        .string_from_i64(credit::correct(credit.unwrap_or(0), used, stamp.charged));
    let cost = q
        .ctx
        .string_from_i64(credit::next_cost(cost.unwrap_or(stamp.charged), used));
    Ok((credits, costs, name, credit, cost))
}
