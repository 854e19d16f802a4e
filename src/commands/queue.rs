//! The whole queue: EMQ.QPAUSE and EMQ.QRESUME (EchoMQ's `queue_pause` and
//! `queue_resume`), and EMQ.POLICY (the stall threshold and the fairness
//! policy in `P meta`).

use crate::ffi::{Argv, Reply};
use crate::model::credit::{Fairness, QUANTUM_DEFAULT_MS, QUANTUM_MAX_MS};
use crate::model::error::{Error, QUANTUM_RANGE};
use crate::model::grammar;
use crate::queue::Queue;
use crate::runtime::Call;

use crate::engine::lanes;

use super::args::Args;

/// `EMQ.QPAUSE P`. Reply 1.
pub fn qpause<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 1, 1)?;
    let q = Queue::new(call, args.prefix(call.ctx)?);
    lanes::queue_pause(&q)?;
    Ok(Reply::Int(1))
}

/// `EMQ.QRESUME P`. Reply 1.
pub fn qresume<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 1, 1)?;
    let q = Queue::new(call, args.prefix(call.ctx)?);
    lanes::queue_resume(&q)?;
    Ok(Reply::Int(1))
}

/// `EMQ.POLICY P max-stalled n | NONE` | `EMQ.POLICY P fairness time
/// [QUANTUM ms]` | `EMQ.POLICY P fairness count`. Reply `OK`.
pub fn policy<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut args = Args::new(argv, 3, 5)?;
    let prefix = args.prefix(call.ctx)?;
    let setting = args.arg()?;
    if grammar::is_keyword(setting.bytes(), "fairness") {
        let policy = args.arg()?;
        let fairness = if grammar::is_keyword(policy.bytes(), "count") {
            Fairness::Count
        } else if grammar::is_keyword(policy.bytes(), "time") {
            let quantum_ms = match args.option("QUANTUM")? {
                None => QUANTUM_DEFAULT_MS,
                Some(q) => grammar::int_in(q.bytes(), "QUANTUM", 1, QUANTUM_MAX_MS, QUANTUM_RANGE)?,
            };
            Fairness::Time { quantum_ms }
        } else {
            return Err(Error::bad_arg("fairness", "time or count"));
        };
        if args.left() > 0 {
            return Err(Error::Syntax);
        }
        let q = Queue::new(call, prefix);
        lanes::fairness(&q, fairness)?;
        return Ok(Reply::Ok);
    }
    if !grammar::is_keyword(setting.bytes(), "max-stalled") {
        return Err(Error::bad_arg("the policy setting", "max-stalled or fairness"));
    }
    let value = args.arg()?;
    if args.left() > 0 {
        return Err(Error::Syntax);
    }
    let max = if grammar::is_keyword(value.bytes(), "NONE") {
        None
    } else {
        grammar::int_in(
            value.bytes(),
            "max-stalled",
            1,
            i64::MAX,
            "an integer >= 1 or NONE",
        )?;
        Some(value)
    };
    let q = Queue::new(call, prefix);
    lanes::policy(&q, max)?;
    Ok(Reply::Ok)
}
