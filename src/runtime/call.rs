//! One call of a command (or one firing of the timer): its context, how it
//! replicates, and whether its work counts in `INFO emq`.

use crate::ffi::Ctx;

use super::replicate::Replicator;
use super::stats::Counter;

pub struct Call<'c> {
    pub ctx: &'c Ctx,
    pub repl: Replicator<'c>,
    /// Whether the call counts in `INFO emq` (a client's or the timer's, not
    /// the primary's stream or an AOF load).
    counts: bool,
}

impl<'c> Call<'c> {
    /// `verbatim`: the command replicates as itself (`emq.replicate
    /// command` and a command whose effects follow from its arguments).
    pub fn new(ctx: &'c Ctx, verbatim: bool) -> Call<'c> {
        Call {
            ctx,
            repl: Replicator::new(ctx, verbatim),
            counts: !ctx.replayed(),
        }
    }

    /// Whether the call records the per-lane figures (SPEC section 8: as
    /// `INFO emq` counts, a replica or an AOF load records nothing).
    pub fn records(&self) -> bool {
        self.counts
    }

    pub fn count(&self, counter: &Counter, n: u64) {
        if self.counts && n > 0 {
            counter.add(n);
        }
    }
}
