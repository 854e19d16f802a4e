//! The ring following a lane (docs/keyspace.md, "The ring invariant"): a
//! lane joins when it becomes serviceable and leaves when it stops, decided
//! from its state before and after a change, never by scanning for it. Every
//! join is followed by the wake EchoMQ's scripts push (`LPUSH P wake 1`,
//! `LTRIM P wake 0 63`), so consumers parked on `BLPOP P wake` keep working,
//! and signals the module's own waiters.

use crate::ffi::{word, Arg, Word};
use crate::model::error::Error;
use crate::model::layout::WAKE_KEEP;
use crate::model::schedule::RingChange;

use super::Queue;

impl<'q> Queue<'q> {
    /// `RPUSH P ring lane…`, in the order given, then one wake per lane.
    pub fn ring_join(&self, lanes: &[Arg]) -> Result<(), Error> {
        if lanes.is_empty() {
            return Ok(());
        }
        let ring = self.ring()?;
        let wake = self.wake()?;
        self.rpush(ring, lanes);
        self.ctx.signal_ready(ring.name());
        let ones: smallvec::SmallVec<[Arg; 4]> = lanes.iter().map(|_| word(Word::One)).collect();
        self.lpush(wake, &ones);
        self.ltrim(wake, WAKE_KEEP, word(Word::WakeEnd));
        Ok(())
    }

    /// `LREM P ring 0 lane` (a scan of the ring; a turn's own lane leaves
    /// from the head instead).
    pub fn ring_leave(&self, lane: Arg) -> Result<(), Error> {
        let ring = self.ring()?;
        self.lrem(ring, lane);
        Ok(())
    }

    /// Applies a ring transition.
    pub fn follow(&self, lane: Arg, change: RingChange) -> Result<(), Error> {
        match change {
            RingChange::Stay => Ok(()),
            RingChange::Join => self.ring_join(&[lane]),
            RingChange::Leave => self.ring_leave(lane),
        }
    }

    /// The ring holds the lane exactly once if `serviceable`, else not at
    /// all, whatever it held: for a lane whose earlier state is unknown (a
    /// damaged value just replaced). Scans the ring.
    pub fn settle(&self, lane: Arg, serviceable: bool) -> Result<(), Error> {
        let ring = self.ring()?;
        if ring.list_positions(lane.bytes()).len() == usize::from(serviceable) {
            return Ok(());
        }
        self.lrem(ring, lane);
        if serviceable {
            self.ring_join(&[lane])?;
        }
        Ok(())
    }
}
