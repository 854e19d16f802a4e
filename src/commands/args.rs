//! [`Args`]: the cursor every command reads its arguments with, each typed
//! by the grammar of `model::grammar`.

use crate::ffi::{Arg, Argv, Ctx};
use crate::model::error::{Error, COUNT_RANGE};
use crate::model::grammar;
use crate::runtime::{cluster, config, Call};

/// A command's arguments, read in order; running past the end is the
/// server's arity error.
pub struct Args<'a> {
    argv: Argv<'a>,
    at: usize,
}

impl<'a> Args<'a> {
    /// The arguments after the command name, when there are `min..=max` of
    /// them (the name excluded). Fewer than `min`, or another number for a
    /// command of fixed arity, is the server's arity error; more than `max`
    /// after the minimum is a syntax error, as the server's own commands
    /// answer a word their grammar has no place for (`SET k v EX`).
    pub fn new(argv: Argv<'a>, min: usize, max: usize) -> Result<Args<'a>, Error> {
        let n = argv.len().saturating_sub(1);
        if n < min || (n > max && min == max) {
            return Err(Error::WrongArity);
        }
        if n > max {
            return Err(Error::Syntax);
        }
        Ok(Args { argv, at: 1 })
    }

    pub fn arg(&mut self) -> Result<Arg<'a>, Error> {
        // Not `ok_or`: an error made and dropped on every argument.
        let Some(arg) = self.argv.get(self.at) else {
            return Err(Error::WrongArity);
        };
        self.at += 1;
        Ok(arg)
    }

    /// How many arguments are left.
    pub fn left(&self) -> usize {
        self.argv.len().saturating_sub(self.at)
    }

    /// The rest.
    pub fn rest(&mut self) -> Vec<Arg<'a>> {
        let rest: Vec<Arg<'a>> = self.argv.tail(self.at).collect();
        self.at = self.argv.len();
        rest
    }

    /// The next argument when it is `keyword` (consumed), else `false`.
    pub fn keyword(&mut self, keyword: &str) -> bool {
        match self.argv.get(self.at) {
            Some(a) if grammar::is_keyword(a.bytes(), keyword) => {
                self.at += 1;
                true
            }
            _ => false,
        }
    }

    /// The queue prefix, of a queue this node may work on now (in a
    /// cluster: its slot served here, not moving key by key).
    pub fn prefix(&mut self, ctx: &Ctx) -> Result<Arg<'a>, Error> {
        self.prefix_and_bytes(ctx).map(|(p, _)| p)
    }

    /// [`Args::prefix`] and its bytes (read once: a claim's queue needs them).
    pub fn prefix_and_bytes(&mut self, ctx: &Ctx) -> Result<(Arg<'a>, &'a [u8]), Error> {
        let p = self.arg()?;
        let bytes = p.bytes();
        grammar::prefix(bytes, ctx.is_cluster())?;
        cluster::may_work(ctx, bytes, false)?;
        Ok((p, bytes))
    }

    pub fn lane(&mut self) -> Result<Arg<'a>, Error> {
        let l = self.arg()?;
        grammar::lane(l.bytes())?;
        Ok(l)
    }

    pub fn int(
        &mut self,
        name: &'static str,
        min: i64,
        max: i64,
        expected: &'static str,
    ) -> Result<i64, Error> {
        grammar::int_in(self.arg()?.bytes(), name, min, max, expected)
    }

    pub fn lease(&mut self) -> Result<i64, Error> {
        grammar::lease(self.arg()?.bytes())
    }

    /// An optional `KEYWORD value` pair at the end (`COUNT n`, `BLOCK ms`):
    /// `None` when no arguments are left; a syntax error when what is left is
    /// not exactly that.
    pub fn option(&mut self, keyword: &str) -> Result<Option<Arg<'a>>, Error> {
        match self.left() {
            0 => Ok(None),
            2 if grammar::is_keyword(self.arg()?.bytes(), keyword) => Ok(Some(self.arg()?)),
            _ => Err(Error::Syntax),
        }
    }

    /// `IN ms | AT ms`: the due time, `ms` from now or at `ms`.
    pub fn when(&mut self, ctx: &Ctx) -> Result<i64, Error> {
        if self.keyword("IN") {
            let ms = grammar::delay(self.arg()?.bytes(), "IN")?;
            Ok(ctx.now_ms().saturating_add(ms))
        } else if self.keyword("AT") {
            self.int("AT", 0, AT_MAX, "an integer from 0 to 9007199254740992")
        } else {
            Err(Error::Syntax)
        }
    }

    /// The trailing `[COUNT n]` (n >= 1), `default` when absent.
    pub fn count(&mut self, default: usize) -> Result<usize, Error> {
        match self.option("COUNT")? {
            None => Ok(default),
            Some(n) => Ok(count(n)?),
        }
    }
}

/// The latest `AT` a due time takes: past 2^53 a score is no longer exact.
const AT_MAX: i64 = 1 << 53;

/// EchoMQ's kind rule for every id of a call, before anything is written;
/// not on a replay (the primary applied it to what a replica or an AOF load
/// replays, whatever `emq.job-kind` they run with).
pub fn of_kind<'a>(call: &Call, ids: impl IntoIterator<Item = Arg<'a>>) -> Result<(), Error> {
    if !call.ctx.replayed() {
        let kind = config::job_kind();
        for id in ids {
            grammar::job_of_kind(id.bytes(), &kind)?;
        }
    }
    Ok(())
}

/// A `COUNT` value (n >= 1).
pub fn count(n: Arg) -> Result<usize, Error> {
    let n = grammar::int_in(n.bytes(), "COUNT", 1, i64::MAX, COUNT_RANGE)?;
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}
