//! Dead letters: EMQ.DEAD lists them, EMQ.REVIVE puts them back.

use crate::ffi::{Argv, Reply};
use crate::model::error::Error;
use crate::queue::Queue;
use crate::runtime::Call;

use crate::engine::dead;

use super::args::Args;

/// `EMQ.DEAD P [COUNT n]`: `[[id, lane, last_error], …]` in `P dead` order.
pub fn dead<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 1, 3)?;
    let prefix = args.prefix(call.ctx)?;
    let count = args.count(100)?;
    let q = Queue::new(call, prefix);
    dead::list(&q, count)
}

/// `EMQ.REVIVE P job [job …]`: the number revived.
pub fn revive<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 2, usize::MAX)?;
    let prefix = args.prefix(call.ctx)?;
    let jobs = args.rest();
    let q = Queue::new(call, prefix);
    Ok(Reply::Int(dead::revive(&q, jobs)?))
}
