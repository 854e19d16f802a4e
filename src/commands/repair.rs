//! EMQ.REPAIR: lanes' bookkeeping re-derived from their pending sets and the
//! lease records that name them, after damage from outside (a deleted ring,
//! a hand-edited hash). A lane's truth:
//! - its active count is the number of its records that have a lease;
//! - its records with no lease are orphans (they block their job ids);
//! - the ring holds it exactly once when serviceable, else not at all.
//!
//! A lane whose ceiling or pending key is damaged keeps its ring membership
//! (claims skip it) and the reply names the damage; its active count and
//! orphans are still repaired, and so are the other lanes of the call.
//!
//! Many lanes share one pass over the ring and the records, so that `emq
//! repair` over a large queue costs O(R + J) per batch, not per lane.

use std::collections::{HashMap, HashSet};

use crate::args::{self, is_keyword};
use crate::errors::{quote, Error};
use crate::ffi::{word, Arg, Argv, Class, RStr, Reply, Word};
use crate::keys::{self, Fixed};
use crate::queue::{stored_int, Queue};
use crate::record;
use crate::schedule::RingChange;

use super::Call;

const NUMLANES: &str = "an integer from 1 to the number of lanes that follow";

/// Records read per HSCAN step.
const SCAN_STEP: u64 = 1_000;

/// What one lane's repair finds.
struct Plan<'a> {
    lane: Arg<'a>,
    /// Its records' jobs (each once).
    records: Vec<RStr>,
    orphans: Vec<RStr>,
    active_before: Option<RStr>,
    active_after: i64,
    /// Its ring positions, from the head.
    positions: Vec<usize>,
    serviceable: bool,
    /// The lane's own state that REPAIR cannot re-derive (its ceiling not an
    /// integer, its pending key of another type): its ring membership is
    /// left as it is, as claims leave a damaged lane, and the reply says why.
    damaged: Option<String>,
}

impl Plan<'_> {
    fn active_changes(&self) -> bool {
        // Stored as HINCRBY would leave it: the integer, or no field at 0.
        let wanted = (self.active_after > 0).then(|| self.active_after.to_string());
        self.active_before.as_ref().map(RStr::bytes) != wanted.as_deref().map(str::as_bytes)
    }

    fn ringed_after(&self) -> usize {
        match self.damaged {
            Some(_) => self.positions.len(),
            None => usize::from(self.serviceable),
        }
    }

    fn ring_changes(&self) -> bool {
        self.positions.len() != self.ringed_after()
    }

    fn changed(&self) -> bool {
        !self.orphans.is_empty() || self.active_changes() || self.ring_changes()
    }

    fn reply(self, dry: bool) -> Reply {
        let changed = self.changed();
        Reply::Map(vec![
            ("changed", Reply::Int(i64::from(changed))),
            ("ringed_before", Reply::Int(self.positions.len() as i64)),
            ("ringed_after", Reply::Int(self.ringed_after() as i64)),
            (
                "active_before",
                self.active_before.map_or(Reply::Null, Reply::Owned),
            ),
            ("active_after", Reply::Int(self.active_after)),
            ("orphan_records_removed", Reply::Int(self.orphans.len() as i64)),
            ("dry_run", Reply::Int(i64::from(dry))),
            (
                "damaged",
                self.damaged.map_or(Reply::Null, |m| Reply::Bytes(m.into_bytes())),
            ),
        ])
    }
}

/// The lanes a call names, and whether it is a dry run and a batch.
fn parse<'a>(rest: &[Arg<'a>]) -> Result<(Vec<Arg<'a>>, bool, bool), Error> {
    let dry = |tail: &[Arg]| match tail {
        [] => Ok(false),
        [k] if is_keyword(k.bytes(), "DRYRUN") => Ok(true),
        _ => Err(Error::Syntax),
    };
    // `lane [DRYRUN]` has at most two arguments; the batch form at least three.
    match rest {
        [lane, tail @ ..] if rest.len() <= 2 => {
            args::lane(lane.bytes())?;
            Ok((vec![*lane], dry(tail)?, false))
        }
        [word, n, tail @ ..] if is_keyword(word.bytes(), "LANES") => {
            let n = args::int_in(n.bytes(), "numlanes", 1, tail.len() as i64, NUMLANES)? as usize;
            let (lanes, tail) = tail.split_at(n);
            for lane in lanes {
                args::lane(lane.bytes())?;
            }
            // A lane given twice is repaired once.
            let lanes = args::distinct(lanes.to_vec(), |a| a.bytes());
            Ok((lanes, dry(tail)?, true))
        }
        _ => Err(Error::Syntax),
    }
}

/// `EMQ.REPAIR P lane [DRYRUN]` (reply: a map of what changed) or
/// `EMQ.REPAIR P LANES n lane … [DRYRUN]` (an array of those maps, one per
/// distinct lane). With DRYRUN nothing is written: the reply says what
/// would change.
pub fn repair<'a>(call: &Call, argv: Argv<'a>) -> Result<Reply, Error> {
    let mut a = args::Args::new(argv, 2, usize::MAX)?;
    let prefix = a.prefix(call.ctx.is_cluster())?;
    let (lanes, dry, batch) = parse(&a.rest())?;
    let q = Queue::new(call, prefix);

    // ---- read: everything is found and validated before the first write ----
    let mut plans: Vec<Plan> = lanes
        .iter()
        .map(|&lane| Plan {
            lane,
            records: Vec::new(),
            orphans: Vec::new(),
            active_before: None,
            active_after: 0,
            positions: Vec::new(),
            serviceable: false,
            damaged: None,
        })
        .collect();
    let index: HashMap<&[u8], usize> = lanes.iter().enumerate().map(|(i, l)| (l.bytes(), i)).collect();
    collect_records(&q, &index, &mut plans)?;
    let ring = q.ring()?;
    for i in 0..ring.len() {
        if let Some(&p) = ring.list_get(i as i64).and_then(|l| index.get(l.bytes())) {
            plans[p].positions.push(i);
        }
    }
    let leases = q.leases()?;
    let active = q.active()?;
    let limits = q.limits()?;
    for plan in &mut plans {
        let (live, orphans): (Vec<RStr>, Vec<RStr>) = std::mem::take(&mut plan.records)
            .into_iter()
            .partition(|job| leases.zset_score(job.as_arg()).is_some());
        plan.orphans = orphans;
        plan.active_after = live.len() as i64;
        plan.active_before = active.hash_get(plan.lane);
        let paused = q.is_paused(plan.lane)?;
        // One lane's damage must not stop the others' repair.
        let limit = stored_int(limits, plan.lane, "limit of lane");
        let depth = match q.pending_zset(plan.lane.bytes()) {
            Ok(zset) => Ok(zset.len()),
            Err(Error::WrongType) => Err(()),
            Err(e) => return Err(e), // NOPERM: the call's, not the lane's
        };
        match (limit, depth) {
            (Ok(limit), Ok(depth)) => {
                plan.serviceable = depth > 0 && !paused && limit.is_none_or(|l| plan.active_after < l);
            }
            (Err(e), _) => plan.damaged = e.message(),
            (_, Err(_)) => {
                let key = keys::pending(q.prefix.bytes(), plan.lane.bytes());
                plan.damaged = Some(format!("'{}' is not a sorted set", quote(&key)));
            }
        }
    }

    // ---- write ----
    if !dry {
        write(&q, &plans)?;
        // A count mended may make a lane already in the ring servable.
        q.wake_waiters();
    }
    let mut replies: Vec<Reply> = plans.into_iter().map(|p| p.reply(dry)).collect();
    Ok(if batch {
        Reply::Array(replies)
    } else {
        replies.remove(0)
    })
}

/// Every lease record naming one of the lanes, by one walk of `P jlease`
/// (a read-only HSCAN, which may return a field twice).
fn collect_records(q: &Queue, index: &HashMap<&[u8], usize>, plans: &mut [Plan]) -> Result<(), Error> {
    let ctx = q.ctx;
    let name = q.name(Fixed::Jlease);
    ctx.check_key(name.as_arg())?;
    let mut seen = HashSet::new();
    let mut cursor = 0;
    loop {
        let (next, items) = ctx.scan_step(c"HSCAN", Some(name.as_arg()), cursor, None, SCAN_STEP)?;
        for pair in items.chunks(2) {
            let [job, rec] = pair else { continue };
            let lane = record::parse(rec.bytes()).and_then(|r| index.get(r.lane).copied());
            if let Some(p) = lane {
                if seen.insert(job.bytes().to_vec()) {
                    plans[p].records.push(ctx.string(job.bytes()));
                }
            }
        }
        if next == 0 {
            return Ok(());
        }
        cursor = next;
    }
}

fn write(q: &Queue, plans: &[Plan]) -> Result<(), Error> {
    let repl = &q.call.repl;
    let orphans: Vec<Arg> = plans
        .iter()
        .flat_map(|p| p.orphans.iter().map(RStr::as_arg))
        .collect();
    if !orphans.is_empty() {
        let jlease = q.jlease()?;
        for &job in &orphans {
            jlease.hash_del(job);
        }
        jlease.notify(Class::Hash, c"hdel");
        let mut hdel = vec![jlease.name()];
        hdel.extend(orphans);
        repl.effect(c"HDEL", &hdel);
    }
    let active = q.active()?;
    for plan in plans.iter().filter(|p| p.active_changes()) {
        if plan.active_after > 0 {
            let n = q.ctx.string_from_i64(plan.active_after);
            active.hash_set(plan.lane, n.as_arg());
            active.notify(Class::Hash, c"hset");
            repl.effect(c"HSET", &[active.name(), plan.lane, n.as_arg()]);
        } else {
            active.hash_del(plan.lane);
            active.notify(Class::Hash, c"hdel");
            repl.effect(c"HDEL", &[active.name(), plan.lane]);
        }
    }
    // Every occurrence of a lane whose membership is wrong goes (from the
    // tail, so that the positions still to go do not move); the serviceable
    // ones then join once, at the tail.
    let changing: Vec<&Plan> = plans.iter().filter(|p| p.ring_changes()).collect();
    let mut doomed: Vec<usize> = changing
        .iter()
        .flat_map(|p| p.positions.iter().copied())
        .collect();
    if !doomed.is_empty() {
        doomed.sort_unstable_by(|a, b| b.cmp(a));
        let ring = q.ring()?;
        for i in doomed {
            ring.list_delete(i);
        }
        // One LREM per lane, as its effects say: `lrem` each, and `del`
        // once, after the last, if the ring is gone.
        let removed: Vec<&&Plan> = changing.iter().filter(|p| !p.positions.is_empty()).collect();
        for (n, plan) in removed.iter().enumerate() {
            if n + 1 == removed.len() {
                ring.notify(Class::List, c"lrem");
            } else {
                q.ctx.notify(Class::List, c"lrem", ring.name());
            }
            repl.effect(c"LREM", &[ring.name(), word(Word::Zero), plan.lane]);
        }
    }
    for plan in changing.iter().filter(|p| p.serviceable) {
        q.follow(plan.lane, RingChange::Join)?;
    }
    Ok(())
}
