//! Claims of the flat queue (SPEC section 9): EMQ.QCLAIM (`@claim`, one
//! job) and EMQ.QBCLAIM (`@bclaim`, up to `n` with one deadline), lowest
//! score first as `ZPOPMIN` takes them; with BLOCK, a claim that finds
//! nothing waits on `P pending` as the lane claims wait on `P ring`
//! (docs/commands.md, "BLOCK"): woken by whatever adds there — a command, a
//! script's `ZADD`, the timer's returns and promotions — in the order the
//! workers began to wait.
//!
//! A head is leased only when its row names no lane and is not leased,
//! delayed or dead (`model::row::flat_head_fate`); a head with no row, or a
//! row leased, delayed or dead, leaves `P pending` unleased (the script would
//! lease it and write a ghost row); a lane's job goes to its lane, as a
//! lane claim's strays do; a row whose attempts are not a number stays and
//! is passed (docs/damage.md, "The flat queue").

use smallvec::SmallVec;

use crate::ffi::block::{Ready, Wait};
use crate::ffi::{word, Arg, Class, Ctx, Key, RStr, Reply, Word};
use crate::model::error::{quote, Error};
use crate::model::row::{flat_head_fate, Fate, Home};
use crate::queue::{Queue, Score};
use crate::runtime::{stats, Call};

use super::books::Books;
use super::timer;

/// Heads a claim looks at past those it leases (strays, passed heads).
const PASS_BUDGET: usize = 1000;

/// A flat claim as its client asked for it.
pub struct FlatRequest<'a> {
    pub prefix: Arg<'a>,
    pub lease: i64,
    /// QBCLAIM's `n`; `None`: QCLAIM (one job, its fields flat).
    pub batch: Option<i64>,
    /// The BLOCK timeout in ms (0 = forever).
    pub block: Option<i64>,
}

struct Leased<'q> {
    job: RStr,
    row: Key<'q>,
    attempts: i64,
    payload: Option<RStr>,
}

/// The reply, or `None` when the client now waits (answered later by
/// `ready`, which parses its arguments again and calls [`on_ready`]).
pub fn claim(call: &Call, req: &FlatRequest, ready: Ready) -> Result<Option<Reply>, Error> {
    let q = Queue::new(call, req.prefix);
    let (paused, _) = q.queue_state()?;
    let deadline = call.ctx.now_ms().saturating_add(req.lease);
    if !paused {
        let (reply, _) = serve(&q, req, deadline, true)?;
        if reply.is_some() || req.block.is_none() || !call.ctx.may_block() {
            return Ok(Some(reply.unwrap_or_else(Reply::empty)));
        }
    } else if req.block.is_none() || !call.ctx.may_block() {
        return Ok(Some(Reply::empty()));
    }
    let timeout = req.block.unwrap_or(0);
    stats::BLOCKED.add(1);
    let lease = q.leases()?.zset_first_score();
    let due = q.schedule()?.zset_first_score();
    let earliest = [lease, due].into_iter().flatten().map(|t| t as i64).min();
    let watch = timer::watch(call.ctx, req.prefix.bytes(), earliest);
    call.ctx.block_on_key(
        q.name(crate::model::layout::Fixed::Flat).as_arg(),
        timeout,
        Wait {
            ready,
            ended: super::wait::wait_ended,
            arg: watch,
        },
    );
    Ok(None)
}

/// A waiting flat claim's `P pending` was signalled: claim once if a head
/// can be leased, else keep waiting and write nothing (heads to drop are
/// left for a claim that leases; Redis 7.0 aborts on a wake-up that writes
/// and keeps waiting).
pub fn on_ready(ctx: &Ctx, req: &FlatRequest) -> Result<Option<Reply>, Error> {
    let call = Call::new(ctx, false);
    let q = Queue::new(&call, req.prefix);
    if q.queue_state()?.0 {
        return Ok(None);
    }
    let deadline = ctx.now_ms().saturating_add(req.lease);
    let (reply, _) = serve(&q, req, deadline, false)?;
    Ok(reply)
}

/// Leases up to the request's jobs: the reply (`None`: none leased) and
/// whether anything was written. `drop_alone`: heads to drop are dropped
/// even when none is leased (not by a wake-up, which may not write and
/// keep waiting).
fn serve(
    q: &Queue,
    req: &FlatRequest,
    deadline: i64,
    drop_alone: bool,
) -> Result<(Option<Reply>, bool), Error> {
    let pending = q.flat()?;
    let leases = q.leases()?;
    let want = req.batch.map_or(1, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let (leased, dropped, strays) = take_heads(q, pending, want)?;
    if leased.is_empty() && ((dropped.is_empty() && strays.is_empty()) || !drop_alone) {
        return Ok((None, false));
    }
    // A lane's job goes to its lane (read before anything is written); one
    // whose lane is damaged stays.
    let mut books = Books::new(q, "flat head(s)");
    let mut moved: SmallVec<[(usize, RStr); 2]> = SmallVec::new();
    for (job, lane) in strays {
        if let Some(Some(i)) = books.home(Some(&lane))? {
            moved.push((i, job));
        }
    }
    {
        let mut gone: SmallVec<[Arg; 8]> = leased.iter().map(|l| l.job.as_arg()).collect();
        gone.extend(dropped.iter().map(RStr::as_arg));
        gone.extend(moved.iter().map(|(_, job)| job.as_arg()));
        q.zrem(pending, &gone, c"zpopmin");
    }
    if !moved.is_empty() {
        q.call.count(&stats::STRAYS, moved.len() as u64);
    }
    for (i, job) in moved {
        books.add(i, job);
    }
    books.write()?;
    if !dropped.is_empty() {
        q.call.count(&stats::STRAYS, dropped.len() as u64);
        q.report(|| {
            format!(
                "{} head(s) of the flat queue dropped: no row that waits there (job '{}' first)",
                dropped.len(),
                quote(dropped[0].bytes())
            )
        });
    }
    if leased.is_empty() {
        return Ok((None, true));
    }
    for l in &leased {
        let token = q.ctx.string_from_i64(l.attempts);
        let pairs = [
            (word(Word::Attempts), token.as_arg()),
            (word(Word::State), word(Word::Active)),
        ];
        q.hset(l.row, &pairs, c"hincrby");
        q.ctx.notify(Class::Hash, c"hset", l.row.name());
    }
    {
        let text = q.ctx.string_from_i64(deadline);
        let ids: SmallVec<[Arg; 8]> = leased.iter().map(|l| l.job.as_arg()).collect();
        q.zadd(
            leases,
            Score {
                value: deadline,
                text: text.as_arg(),
            },
            &ids,
        );
    }
    // While clients wait, the timer returns these leases at their end.
    timer::due(q.ctx, q.prefix_bytes, deadline);
    q.call.count(&stats::CLAIMS, 1);
    q.call.count(&stats::JOBS_CLAIMED, leased.len() as u64);
    let mut jobs: Vec<Reply> = leased
        .into_iter()
        .map(|l| {
            Reply::Array(vec![
                Reply::Owned(l.job),
                l.payload.map_or(Reply::Null, Reply::Owned),
                Reply::Int(l.attempts),
            ])
        })
        .collect();
    let reply = match req.batch {
        None => jobs.pop().unwrap_or_else(Reply::empty),
        Some(_) => Reply::Array(jobs),
    };
    Ok((Some(reply), true))
}

/// The heads to lease (up to `want`), to drop, and to send to their lanes,
/// lowest first; at most `want + PASS_BUDGET` heads looked at.
#[allow(clippy::type_complexity)]
fn take_heads<'q>(
    q: &Queue<'q>,
    pending: Key<'q>,
    want: usize,
) -> Result<
    (
        SmallVec<[Leased<'q>; 4]>,
        SmallVec<[RStr; 2]>,
        Vec<(RStr, Vec<u8>)>,
    ),
    Error,
> {
    let budget = want.saturating_add(PASS_BUDGET);
    let depth = pending.len();
    let mut leased: SmallVec<[Leased<'q>; 4]> = SmallVec::new();
    let mut dropped: SmallVec<[RStr; 2]> = SmallVec::new();
    let mut strays: Vec<(RStr, Vec<u8>)> = Vec::new();
    let mut looked = 0usize;
    let mut window = want.min(depth);
    while window > looked {
        let heads = pending.zset_range(f64::INFINITY, window);
        for (job, _) in heads.into_iter().skip(looked) {
            looked += 1;
            let row = q.row_or_none(job.bytes())?;
            match flat_head_fate(&row.view()) {
                Fate::Lease(attempts) => {
                    let payload = row.key.hash_get(word(Word::Payload));
                    leased.push(Leased {
                        job,
                        row: row.key,
                        attempts,
                        payload,
                    });
                }
                Fate::Stray(Home::Elsewhere) => dropped.push(job),
                Fate::Stray(Home::Lane(lane)) => {
                    let lane = lane.to_vec();
                    strays.push((job, lane));
                }
                Fate::Stray(Home::Flat) | Fate::Damaged => {}
            }
            if leased.len() >= want {
                return Ok((leased, dropped, strays));
            }
        }
        window = window.saturating_mul(2).min(budget).min(depth);
    }
    Ok((leased, dropped, strays))
}
