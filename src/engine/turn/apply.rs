//! A planned turn carried out: the writes (each notifying and replicating as
//! its core command would), the reply, and — under `emq.replicate command`
//! — the one `EMQ.TURN` a served turn replicates as instead of its effects.

use smallvec::SmallVec;

use crate::ffi::{word, Arg, Class, Key, Reply, Text, Word};
use crate::model::credit;
use crate::model::error::{quote, Error};
use crate::model::schedule::{ring_change, Charge, Clamp, Lane, RingChange};
use crate::queue::Score;
use crate::runtime::{config, stats};

use crate::engine::{figures, rate};

use super::plan::{Plan, Serving, StrayTo};

use super::{claim_reply, Claim, Served};

impl<'q> Claim<'q> {
    /// Carries out a planned turn; the reply when it leased jobs.
    pub fn apply(&self, lane: Text, plan: &mut Plan<'q>, deadline: i64) -> Result<Option<Reply>, Error> {
        let q = self.q;
        let Plan::Serve(s) = plan else {
            return self.apply_unserved(lane, plan);
        };
        let (k, leaves, clamp) = (s.k, s.leaves, s.clamp);
        let (time, empties) = (s.time, s.empties);
        // Opened (and type-checked) before the first write.
        let credits = match time {
            Some(_) => Some(q.credits()?),
            None => None,
        };
        // Opened (and permission-checked) before the first write.
        let rate = match s.rate {
            Some(after) => {
                let next = match after.throttled_until {
                    Some(_) => Some(q.next()?),
                    None => None,
                };
                Some((after, q.tats()?, next))
            }
            None => None,
        };
        let as_command = config::replicate_command() && !s.leased.is_empty();
        let served = if as_command {
            q.call.repl.muted(|| self.write(&lane, s, deadline))?
        } else {
            self.write(&lane, s, deadline)?
        };
        if served.is_empty() {
            return Ok(None);
        }
        if as_command {
            q.call.repl.turn(q.prefix, lane.as_arg(), deadline, k, leaves);
        }
        if let (Some(charge), Some(credits)) = (time, credits) {
            self.charge(&lane, &served, charge, empties, credits, as_command);
        }
        // After the turn: a replayed EMQ.TURN knows no rates, so
        // these replicate as their effects in either mode.
        if let Some((after, tats, next)) = rate {
            let tat = q.ctx.string_from_i64(after.tat);
            q.hset(tats, &[(lane.as_arg(), tat.as_arg())], c"hset");
            // Left throttled: it left the ring with its turn.
            if let (Some(until), Some(next)) = (after.throttled_until, next) {
                rate::wait_until(q, next, lane.as_arg(), until);
                q.call.count(&stats::LANES_THROTTLED, 1);
            }
        }
        q.call.count(&stats::CLAIMS, 1);
        q.call.count(&stats::JOBS_CLAIMED, served.len() as u64);
        {
            // Pushed, not collected: a collect reserves first, which
            // costs more than a turn of one or a few jobs.
            let mut jobs: SmallVec<[figures::Served; 4]> = SmallVec::new();
            for s in &served {
                jobs.push(figures::Served {
                    job: s.job.bytes(),
                    first: s.attempts == 1,
                });
            }
            figures::turn(q, lane.bytes(), clamp, &jobs, time.is_some());
        }
        crate::engine::timer::due(q.ctx, q.prefix_bytes, deadline);
        Ok(Some(claim_reply(self.kind, lane, served)))
    }

    /// A turn that serves no job: the lane dropped, passed over, skipped
    /// or throttled. Out of line, as [`Claim::rehome`].
    #[inline(never)]
    fn apply_unserved(&self, lane: Text, plan: &Plan<'q>) -> Result<Option<Reply>, Error> {
        let q = self.q;
        match plan {
            Plan::Drop => {
                q.lpop(self.ring);
                Ok(None)
            }
            Plan::Full => {
                q.lpop(self.ring);
                figures::turn(q, lane.bytes(), Clamp::Ceiling, &[], false);
                Ok(None)
            }
            Plan::Pass { credit } => {
                self.pass(lane, *credit)?;
                Ok(None)
            }
            Plan::Skip(damage) => {
                q.rotate(self.ring);
                q.call.count(&stats::LANES_SKIPPED, 1);
                q.report(|| format!("lane '{}' skipped: {}", quote(lane.bytes()), damage.describe()));
                Ok(None)
            }
            Plan::Throttle { until } => {
                let next = q.next()?;
                q.lpop(self.ring);
                rate::wait_until(q, next, lane.as_arg(), *until);
                q.call.count(&stats::LANES_THROTTLED, 1);
                figures::turn(q, lane.bytes(), Clamp::Rate, &[], false);
                Ok(None)
            }
            Plan::Serve(_) => unreachable!("a serving plan is applied by `apply`"),
        }
    }

    /// The writes of a serving turn, in the order `@gwclaim` makes them.
    pub(super) fn write(
        &self,
        lane: &Text,
        s: &mut Serving<'q>,
        deadline: i64,
    ) -> Result<crate::ffi::Jobs, Error> {
        let q = self.q;
        // A lane that leaves is rotated to the tail and removed from it: in
        // one step, the head removed (O(1), where the script scans the ring).
        if s.leaves {
            q.lpop(self.ring);
        } else {
            q.rotate(self.ring);
        }
        let stamp = s.time.map(|c| {
            (
                q.ctx.string_from_i64(q.ctx.now_ms()),
                q.ctx.string_from_i64(c.cost),
            )
        });
        let taken = s
            .leased
            .iter()
            .map(|l| &l.job)
            .chain(s.strays.iter().map(|st| &st.job));
        with_ids(s.leased.len() + s.strays.len(), taken, |taken| {
            q.zrem(s.pending, taken, c"zpopmin")
        });
        for l in &s.leased {
            let token = q.ctx.string_from_i64(l.attempts);
            let set = [
                (word(Word::Attempts), token.as_arg()),
                (word(Word::State), word(Word::Active)),
            ];
            match &stamp {
                None => q.hset(l.row, &set, c"hincrby"),
                // Under fairness by time, the row's stamp too: its turn's
                // claim time and its charge.
                Some((claimed, charged)) => q.hset(
                    l.row,
                    &[
                        set[0],
                        set[1],
                        (word(Word::Claimed), claimed.as_arg()),
                        (word(Word::Charged), charged.as_arg()),
                    ],
                    c"hincrby",
                ),
            }
            q.ctx.notify(Class::Hash, c"hset", l.row.name());
        }
        if !s.leased.is_empty() {
            let text = q.ctx.string_from_i64(deadline);
            let score = Score {
                value: deadline,
                text: text.as_arg(),
            };
            let leased = s.leased.iter().map(|l| &l.job);
            with_ids(s.leased.len(), leased, |ids| q.zadd(self.leases, score, ids));
            q.set_count(self.active, lane.as_arg(), s.new_active);
        }
        if !s.strays.is_empty() {
            self.rehome(s)?;
            q.call.count(&stats::STRAYS, s.strays.len() as u64);
            q.report(|| {
                format!(
                    "lane '{}': {} head(s) not leased, their rows not the lane's (job '{}' first)",
                    quote(lane.bytes()),
                    s.strays.len(),
                    quote(s.strays[0].job.bytes())
                )
            });
        }
        let mut served = crate::ffi::Jobs::new();
        for l in s.leased.drain(..) {
            served.push(Served {
                job: l.job,
                payload: l.payload,
                attempts: l.attempts,
            });
        }
        Ok(served)
    }

    /// A head in debt passed over (fairness by time): it rotates to the tail
    /// and keeps its topped-up credit; the claim takes the next head.
    #[inline(never)]
    pub(super) fn pass(&self, lane: Text, credit: i64) -> Result<(), Error> {
        let q = self.q;
        let credits = q.credits()?;
        q.rotate(self.ring);
        let text = q.ctx.string_from_i64(credit);
        q.hset(credits, &[(lane.as_arg(), text.as_arg())], c"hset");
        self.passes.set(self.passes.get() + 1);
        self.passed.borrow_mut().push(lane.bytes().into());
        q.call.count(&stats::LANES_PASSED, 1);
        Ok(())
    }

    /// A served turn under fairness by time: the lane's credit less what its
    /// jobs were charged (a positive credit forgotten when the turn emptied
    /// the lane). Under `emq.replicate command` the rows' stamps, written
    /// under the muted turn, replicate as their effects after `EMQ.TURN`.
    #[inline(never)]
    fn charge(
        &self,
        lane: &Text,
        served: &[Served],
        charge: Charge,
        empties: bool,
        credits: Key<'q>,
        as_command: bool,
    ) {
        let q = self.q;
        let mut left = credit::charge(charge.credit, served.len() as i64, charge.cost);
        if empties {
            left = credit::emptied(left);
        }
        let text = q.ctx.string_from_i64(left);
        q.hset(credits, &[(lane.as_arg(), text.as_arg())], c"hset");
        if as_command {
            let claimed = q.ctx.string_from_i64(q.ctx.now_ms());
            let cost = q.ctx.string_from_i64(charge.cost);
            for s in served {
                let Ok(row) = q.row_key(s.job.bytes()) else {
                    continue;
                };
                q.hset(
                    row,
                    &[
                        (word(Word::Claimed), claimed.as_arg()),
                        (word(Word::Charged), cost.as_arg()),
                    ],
                    c"hset",
                );
            }
        }
    }

    /// The strays to where their rows say they wait; a lane that becomes
    /// serviceable by them joins the ring. Out of line, as all that a
    /// common turn does not do: the turn's own code stays dense
    /// (docs/performance.md, "The instruction cache").
    #[cold]
    #[inline(never)]
    fn rehome(&self, s: &Serving<'q>) -> Result<(), Error> {
        let q = self.q;
        let flat: SmallVec<[Arg; 2]> = s
            .strays
            .iter()
            .filter(|st| matches!(st.to, StrayTo::Flat(_)))
            .map(|st| st.job.as_arg())
            .collect();
        if let Some(StrayTo::Flat(set)) = s
            .strays
            .iter()
            .map(|st| &st.to)
            .find(|t| matches!(t, StrayTo::Flat(_)))
        {
            q.zadd(*set, Score::zero(), &flat);
        }
        let mut done: SmallVec<[&[u8]; 2]> = SmallVec::new();
        for st in &s.strays {
            let StrayTo::Lane { name, set, before } = &st.to else {
                continue;
            };
            if done.contains(&name.bytes()) {
                continue;
            }
            done.push(name.bytes());
            let jobs: SmallVec<[Arg; 2]> = s
                .strays
                .iter()
                .filter(|o| matches!(&o.to, StrayTo::Lane { name: n, .. } if n.bytes() == name.bytes()))
                .map(|o| o.job.as_arg())
                .collect();
            q.zadd(*set, Score::zero(), &jobs);
            if let Some(before) = before {
                let after = Lane {
                    depth: set.len() as u64,
                    ..*before
                };
                if ring_change(before, &after) == RingChange::Join {
                    q.ring_join(&[name.as_arg()])?;
                }
            }
        }
        Ok(())
    }
}

/// `f` of the `len` job ids `jobs`: one (the common turn) passed without a
/// list, up to eight on the stack.
fn with_ids<'a>(len: usize, mut jobs: impl Iterator<Item = &'a Text>, f: impl FnOnce(&[Arg<'a>])) {
    if len == 1 {
        if let Some(one) = jobs.next() {
            return f(&[one.as_arg()]);
        }
    }
    let many: SmallVec<[Arg<'a>; 8]> = jobs.map(Text::as_arg).collect();
    f(&many)
}
