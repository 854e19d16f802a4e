//! The commands, one file per family, and what every call shares: the
//! context, how it replicates, and whether it counts in `INFO emq`.

pub mod claim;
pub mod dead;
pub mod lanes;
pub mod lifecycle;
pub mod operate;
pub mod release;
pub mod repair;

use crate::catalog::CommandDoc;
use crate::config;
use crate::errors::Error;
use crate::ffi::{Argv, Ctx, Reply};
use crate::replicate::Replicator;
use crate::stats::Counter;

/// A command body: reads its arguments, does its work, returns its reply.
pub type ReplyFn = for<'a> fn(&Call, Argv<'a>) -> Result<Reply, Error>;

/// A command body that may block its client instead of replying now
/// (`None`: the client waits and is answered later).
pub type BlockFn = for<'a> fn(&Call, Argv<'a>) -> Result<Option<Reply>, Error>;

#[derive(Clone, Copy)]
pub enum Handler {
    Replies(ReplyFn),
    MayBlock(BlockFn),
}

/// One call of a command.
pub struct Call<'c> {
    pub ctx: &'c Ctx,
    pub repl: Replicator<'c>,
    /// Whether the call counts in `INFO emq` (a client's, not the primary's
    /// stream or an AOF load).
    counts: bool,
}

impl<'c> Call<'c> {
    pub fn new(ctx: &'c Ctx, verbatim: bool) -> Call<'c> {
        Call {
            ctx,
            repl: Replicator::new(ctx, verbatim),
            counts: !ctx.replayed(),
        }
    }

    pub fn count(&self, counter: &Counter, n: u64) {
        if self.counts && n > 0 {
            counter.add(n);
        }
    }
}

/// Runs command `doc` (the runner `lib.rs` registers the table with).
pub fn run<'a>(ctx: &Ctx, argv: Argv<'a>, doc: &'static CommandDoc) -> Result<Option<Reply>, Error> {
    let call = Call::new(ctx, doc.deterministic && config::replicate_command());
    match doc.handler {
        Handler::Replies(body) => body(&call, argv).map(Some),
        Handler::MayBlock(body) => body(&call, argv),
    }
}
