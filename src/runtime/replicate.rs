//! What a command sends to replicas and the AOF (docs/production.md,
//! "Replication"): its effects as core commands with explicit values (the
//! default: replicas and AOF readers need no module), or — for a command
//! whose effects follow from the keyspace and its arguments alone, under
//! `emq.replicate command` — the command itself. A served claim turn in
//! `command` mode is one `EMQ.TURN`.

use std::cell::Cell;
use std::ffi::CStr;

use crate::ffi::{Arg, Ctx};

pub struct Replicator<'c> {
    ctx: &'c Ctx,
    /// Replicate the command itself instead of its effects.
    verbatim: bool,
    /// Effects are not sent (a turn that replicates as one `EMQ.TURN`).
    mute: Cell<bool>,
    /// Effects are sent though the command replicates as itself (what it
    /// writes from the clock or the module's memory: a replica running the
    /// command could not).
    force: Cell<bool>,
    wrote: Cell<bool>,
}

impl<'c> Replicator<'c> {
    pub fn new(ctx: &'c Ctx, verbatim: bool) -> Replicator<'c> {
        Replicator {
            ctx,
            verbatim,
            mute: Cell::new(false),
            force: Cell::new(false),
            wrote: Cell::new(false),
        }
    }

    /// One effect, `cmd args…` (sent unless the command replicates as
    /// itself). Several in one command reach replicas in one MULTI/EXEC.
    pub fn effect(&self, cmd: &CStr, args: &[Arg]) {
        if self.sends_effect() {
            self.ctx.replicate(cmd, args);
        }
    }

    /// A write made now, recorded; whether its effect is sent (a writer
    /// builds its effect's arguments, in place, only when it is).
    pub fn sends_effect(&self) -> bool {
        self.wrote.set(true);
        self.sends()
    }

    /// Whether an effect made now is sent: a writer that builds its effect
    /// need not when not.
    pub fn sends(&self) -> bool {
        (!self.verbatim || self.force.get()) && !self.mute.get()
    }

    /// Runs `f` with its effects sent whatever the mode: a command that
    /// replicates as itself sends them before itself (one MULTI/EXEC), and
    /// its replay on a replica leaves them as they came.
    pub fn forced<T>(&self, f: impl FnOnce() -> T) -> T {
        let was = self.force.replace(true);
        let out = f();
        self.force.set(was);
        out
    }

    /// Whether the command has written so far.
    pub fn wrote(&self) -> bool {
        self.wrote.get()
    }

    /// Runs `f` with its effects not sent: what it writes replicates in
    /// another form (one `EMQ.TURN`, or a replayed turn in the replica's own
    /// AOF).
    pub fn muted<T>(&self, f: impl FnOnce() -> T) -> T {
        let was = self.mute.replace(true);
        let out = f();
        self.mute.set(was);
        out
    }

    /// A served claim turn as one internal command (`emq.replicate command`).
    pub fn turn(&self, prefix: Arg, lane: Arg, deadline: i64, k: i64, leaves: bool) {
        self.wrote.set(true);
        self.ctx
            .replicate_sslll(c"EMQ.TURN", prefix, lane, [deadline, k, i64::from(leaves)]);
    }

    /// The running command as the client sent it (EMQ.TURN records itself in
    /// a replica's own AOF).
    pub fn itself(&self) {
        self.ctx.replicate_verbatim();
    }
}

impl Drop for Replicator<'_> {
    /// The end of a command: in verbatim mode, it is replicated if it wrote
    /// (also after a panic: a replica running the same command on the same
    /// keyspace stops at the same point).
    fn drop(&mut self) {
        if self.verbatim && self.wrote.get() {
            self.ctx.replicate_verbatim();
        }
    }
}
