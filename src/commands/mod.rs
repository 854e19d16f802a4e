//! The commands: argv → engine → reply, one small file per family. The table
//! that names them (flags, arity, docs) is `catalog.rs`.

pub mod args;
pub mod claim;
pub mod dead;
pub mod edits;
pub mod flat;
pub mod jobs;
pub mod lanes;
pub mod operate;
pub mod queue;
pub mod reads;
pub mod stats;
pub mod sweep;

use crate::ffi::{Argv, Reply};
use crate::model::error::Error;
use crate::runtime::Call;

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
