//! The command table: each command's handler, whether it replicates as
//! itself under `emq.replicate command`, and what the server is told of it
//! (flags, arity, `COMMAND DOCS`). `lib.rs` registers what is here;
//! docs/commands.md describes the same table (a test keeps them in step).

use crate::commands::{claim, dead, edits, flat, jobs, lanes, operate, queue, reads, stats, sweep, Handler};
use crate::ffi::docs::{ArgDoc, ArgKind, CommandSpec};
use crate::ffi::{Argv, Ctx, Reply};
use crate::model::error::Error;
use crate::runtime::{config, Call};

pub struct Command {
    pub spec: CommandSpec,
    pub handler: Handler,
    /// Whether its effects follow from the keyspace and its arguments alone
    /// (no clock, no config): with `emq.replicate command` it is replicated
    /// as itself.
    pub deterministic: bool,
}

pub const SINCE: &str = "0.3.0";

const fn arg(name: &'static str, kind: ArgKind) -> ArgDoc {
    ArgDoc {
        name,
        kind,
        token: None,
        optional: false,
        multiple: false,
    }
}

const fn many(name: &'static str, kind: ArgKind) -> ArgDoc {
    ArgDoc {
        multiple: true,
        ..arg(name, kind)
    }
}

const fn keyed(token: &'static str, name: &'static str, kind: ArgKind) -> ArgDoc {
    ArgDoc {
        token: Some(token),
        ..arg(name, kind)
    }
}

const fn optional(doc: ArgDoc) -> ArgDoc {
    ArgDoc {
        optional: true,
        ..doc
    }
}

const PREFIX: ArgDoc = arg("prefix", ArgKind::Key);
const LANE: ArgDoc = arg("lane", ArgKind::Str);
const JOB: ArgDoc = arg("job", ArgKind::Str);
const TOKEN: ArgDoc = arg("token", ArgKind::Str);
const LEASE: ArgDoc = arg("lease", ArgKind::Int);
const BLOCK: ArgDoc = optional(keyed("BLOCK", "timeout", ArgKind::Int));
const COUNT: ArgDoc = optional(keyed("COUNT", "count", ArgKind::Int));
const NONE: ArgDoc = keyed("NONE", "none", ArgKind::Token);
const JOB_PAYLOAD: &[ArgDoc] = &[JOB, arg("payload", ArgKind::Str)];
const JOB_TOKEN: &[ArgDoc] = &[JOB, TOKEN];
const LIMIT_VALUE: &[ArgDoc] = &[arg("limit", ArgKind::Int), NONE];
const RATE_VALUE: &[ArgDoc] = &[
    arg(
        "rate",
        ArgKind::Block(&[
            arg("n", ArgKind::Int),
            arg("period", ArgKind::Int),
            optional(keyed("BURST", "burst", ArgKind::Int)),
        ]),
    ),
    NONE,
];
const STALLED_VALUE: &[ArgDoc] = &[arg("max-stalled", ArgKind::Int), NONE];
const FAIRNESS_VALUE: &[ArgDoc] = &[
    arg(
        "time",
        ArgKind::Block(&[
            keyed("TIME", "time", ArgKind::Token),
            optional(keyed("QUANTUM", "ms", ArgKind::Int)),
        ]),
    ),
    keyed("COUNT", "count", ArgKind::Token),
];
const POLICY_SETTING: &[ArgDoc] = &[
    keyed("MAX-STALLED", "max-stalled", ArgKind::OneOf(STALLED_VALUE)),
    keyed("FAIRNESS", "fairness", ArgKind::OneOf(FAIRNESS_VALUE)),
];
const WHEN: &[ArgDoc] = &[
    keyed("IN", "ms", ArgKind::Int),
    keyed("AT", "unix-time-ms", ArgKind::Int),
];
const REAP_WHICH: &[ArgDoc] = &[
    keyed("GROUP", "lane", ArgKind::Str),
    keyed("MAXSTALLED", "max-stalled", ArgKind::Int),
];
const REPAIR_LANES: &[ArgDoc] = &[
    LANE,
    keyed(
        "LANES",
        "batch",
        ArgKind::Block(&[arg("numlanes", ArgKind::Int), many("lane", ArgKind::Str)]),
    ),
];

const BY_ORDER: &[ArgDoc] = &[
    keyed("OLDEST", "oldest", ArgKind::Token),
    keyed("WAIT", "wait", ArgKind::Token),
    keyed("JOBS", "jobs", ArgKind::Token),
    keyed("BUSY", "busy", ArgKind::Token),
];
const STATS_WHAT: &[ArgDoc] = &[
    LANE,
    keyed("LANE", "lane", ArgKind::Str),
    keyed(
        "LANES",
        "batch",
        ArgKind::Block(&[arg("numlanes", ArgKind::Int), many("lane", ArgKind::Str)]),
    ),
    keyed("RESET", "reset", ArgKind::Token),
    arg(
        "top",
        ArgKind::Block(&[COUNT, optional(keyed("BY", "order", ArgKind::OneOf(BY_ORDER)))]),
    ),
];

/// A row of the table (a const fn: the table is built at compile time, so
/// one argument per column).
#[allow(clippy::too_many_arguments)]
const fn command(
    name: &'static str,
    handler: Handler,
    flags: &'static str,
    arity: i32,
    args: &'static [ArgDoc],
    summary: &'static str,
    complexity: &'static str,
    deterministic: bool,
) -> Command {
    Command {
        spec: CommandSpec {
            name,
            flags,
            arity,
            summary,
            complexity,
            since: SINCE,
            args,
            readonly: false,
            internal: false,
        },
        handler,
        deterministic,
    }
}

/// A row of the table for a command that only reads.
const fn reader(
    name: &'static str,
    handler: Handler,
    arity: i32,
    args: &'static [ArgDoc],
    summary: &'static str,
    complexity: &'static str,
) -> Command {
    let mut c = command(name, handler, "readonly", arity, args, summary, complexity, false);
    c.spec.readonly = true;
    c
}

use Handler::{MayBlock, Replies};

#[rustfmt::skip]
pub const COMMANDS: &[Command] = &[
    command("emq.claim", MayBlock(claim::claim), "write fast blocking", -3, &[PREFIX, LEASE, BLOCK],
        "Rotates the ring one step and leases the rotated lane's head job (EchoMQ's @gclaim); with BLOCK, waits for a serviceable lane.",
        "O(log N) where N is the number of the lane's pending jobs.", false),
    command("emq.wclaim", MayBlock(claim::wclaim), "write blocking", -3, &[PREFIX, LEASE, BLOCK],
        "Rotates the ring one step and leases K = min(weight, depth, headroom) heads of the rotated lane (EchoMQ's @gwclaim); with BLOCK, waits for a serviceable lane.",
        "O(K log N) where N is the number of the lane's pending jobs.", false),
    command("emq.bclaim", MayBlock(claim::bclaim), "write blocking", -3, &[PREFIX, LEASE, BLOCK],
        "Rotates the ring one step and leases K = min(depth, headroom, emq.max-claim) heads of the rotated lane (EchoMQ's @gbclaim); with BLOCK, waits for a serviceable lane.",
        "O(K log N) where N is the number of the lane's pending jobs.", false),
    command("emq.enqueue", Replies(lanes::enqueue), "write deny-oom", -5, &[PREFIX, LANE, many("job-payload", ArgKind::Block(JOB_PAYLOAD))],
        "Writes each new job's row and adds it to the lane (EchoMQ's @genqueue), skipping duplicates; rings the lane with a wake if it became serviceable.",
        "O(M log N) for M jobs added to a lane of N.", true),
    command("emq.weight", Replies(lanes::weight), "write fast", 4, &[PREFIX, LANE, arg("weight", ArgKind::Int)],
        "Sets a lane's weight: its share of heads per weighted turn (EchoMQ's @gweight).",
        "O(1)", true),
    command("emq.pause", Replies(lanes::pause), "write", -3, &[PREFIX, LANE, optional(keyed("FOR", "ms", ArgKind::Int))],
        "Takes a lane out of service: into P paused, out of the ring (EchoMQ's @gpause); with FOR, the module resumes it ms later.",
        "O(R) for a ring of R lanes.", false),
    command("emq.resume", Replies(lanes::resume), "write fast", 3, &[PREFIX, LANE],
        "Puts a paused lane back in service, ringing it with a wake if serviceable (EchoMQ's @gresume).",
        "O(1)", false),
    command("emq.limit", Replies(lanes::limit), "write", 4, &[PREFIX, LANE, arg("limit", ArgKind::OneOf(LIMIT_VALUE))],
        "Sets or removes a lane's concurrency ceiling; the ring follows (EchoMQ's @glimit).",
        "O(1), or O(R) for a ring of R lanes when the lane leaves it.", true),
    command("emq.rate", Replies(lanes::rate), "write", -4, &[PREFIX, LANE, arg("rate", ArgKind::OneOf(RATE_VALUE))],
        "Sets or removes a lane's rate: at most n starts per period ms, bursts up to burst (GCRA); a throttled lane leaves the ring and comes back by itself.",
        "O(1), or O(R) for a ring of R lanes when the lane joins or leaves it.", false),
    command("emq.reassign", Replies(lanes::reassign), "write", 4, &[PREFIX, JOB, LANE],
        "Moves a pending job from the lane its row names to another (EchoMQ's @greassign).",
        "O(log N), or O(R) for a ring of R lanes when a lane leaves it.", true),
    command("emq.drain", Replies(lanes::drain), "write", 3, &[PREFIX, LANE],
        "Deletes every pending job of a lane with its row and logs, and the lane leaves the ring (EchoMQ's @gdrain).",
        "O(N) for N pending jobs, plus O(R) for a ring of R lanes.", true),
    command("emq.complete", Replies(jobs::complete), "write fast", 4, &[PREFIX, JOB, TOKEN],
        "Completes a job whose attempts is the token: it leaves its lease, its row is deleted, the completed count grows (EchoMQ's @complete).",
        "O(log N)", true),
    command("emq.retry", Replies(jobs::retry), "write fast", 7, &[PREFIX, JOB, TOKEN, arg("delay", ArgKind::Int), arg("max", ArgKind::Int), arg("error", ArgKind::Str)],
        "Ends a job's lease under its token: delayed until now + delay, or dead at max attempts (EchoMQ's @retry).",
        "O(log N)", false),
    command("emq.delay", Replies(jobs::delay), "write fast", 6, &[PREFIX, JOB, TOKEN, arg("when", ArgKind::OneOf(WHEN))],
        "Moves a job under its token into the schedule, IN ms from now or AT a time (EchoMQ's @delay).",
        "O(log N)", false),
    command("emq.extend", Replies(jobs::extend), "write fast", 5, &[PREFIX, JOB, TOKEN, LEASE],
        "Moves a leased job's deadline to now + lease under its token (EchoMQ's @extend_lock).",
        "O(log N)", false),
    command("emq.reap", Replies(sweep::reap), "write", -2, &[PREFIX, optional(arg("which", ArgKind::OneOf(REAP_WHICH))), COUNT],
        "Returns expired leases to their lanes or the flat queue, earliest first (EchoMQ's @reap, @greap_group with GROUP, @sweep_stalled with MAXSTALLED).",
        "O(M log N) for M leases ended.", false),
    command("emq.promote", Replies(sweep::promote), "write", -2, &[PREFIX, COUNT],
        "Moves due scheduled jobs back to their lanes or the flat queue (EchoMQ's @promote).",
        "O(M log N) for M jobs promoted.", false),
    command("emq.qpause", Replies(queue::qpause), "write fast", 2, &[PREFIX],
        "Pauses the whole queue: claims serve nothing (EchoMQ's queue pause).",
        "O(1)", true),
    command("emq.qresume", Replies(queue::qresume), "write fast", 2, &[PREFIX],
        "Resumes the whole queue and wakes the waiting claims (EchoMQ's queue resume).",
        "O(1)", true),
    command("emq.policy", Replies(queue::policy), "write fast", -4, &[PREFIX, arg("setting", ArgKind::OneOf(POLICY_SETTING))],
        "Sets the queue's policies: max-stalled (every return of an expired lease counts the job's stalls and kills it at the threshold), and fairness (count, EchoMQ's rule, or time: a weight is a share of worker time the module measures).",
        "O(1)", true),
    command("emq.qenqueue", Replies(flat::qenqueue), "write deny-oom", -4, &[PREFIX, many("job-payload", ArgKind::Block(JOB_PAYLOAD))],
        "Writes each new job's row and adds it to the flat queue P pending (EchoMQ's @enqueue), skipping duplicates; wakes the flat claims waiting.",
        "O(M log N) for M jobs added to a queue of N.", true),
    command("emq.qschedule", Replies(flat::qschedule), "write deny-oom", 6, &[PREFIX, JOB, arg("payload", ArgKind::Str), arg("when", ArgKind::OneOf(WHEN))],
        "Writes a new job's row as scheduled, due IN ms from now or AT a time (EchoMQ's @schedule).",
        "O(log N)", false),
    command("emq.qclaim", MayBlock(flat::qclaim), "write blocking", -3, &[PREFIX, LEASE, BLOCK],
        "Leases the flat queue's first job (EchoMQ's @claim); with BLOCK, waits for one.",
        "O(log N)", false),
    command("emq.qbclaim", MayBlock(flat::qbclaim), "write blocking", -4, &[PREFIX, LEASE, arg("n", ArgKind::Int), BLOCK],
        "Leases up to n of the flat queue's first jobs, one deadline (EchoMQ's @bclaim); with BLOCK, waits for one.",
        "O(n log N)", false),
    command("emq.mextend", Replies(flat::mextend), "write", -5, &[PREFIX, LEASE, many("job-token", ArgKind::Block(JOB_TOKEN))],
        "Moves each leased job's deadline to now + lease under its token (EchoMQ's @extend_locks); replies the ids not extended.",
        "O(M log N) for M jobs.", false),
    command("emq.setdata", Replies(edits::setdata), "write deny-oom fast", 4, &[PREFIX, JOB, arg("payload", ArgKind::Str)],
        "Sets a job's payload (EchoMQ's @update_data).",
        "O(1)", true),
    command("emq.progress", Replies(edits::progress), "write deny-oom fast", 4, &[PREFIX, JOB, arg("progress", ArgKind::Str)],
        "Sets a job's progress and publishes it on P events as JSON (EchoMQ's @update_progress).",
        "O(1)", true),
    command("emq.log", Replies(edits::log), "write deny-oom", -4, &[PREFIX, JOB, arg("line", ArgKind::Str), optional(keyed("KEEP", "n", ArgKind::Int))],
        "Appends a line to a job's log, keeping its last n lines (EchoMQ's @add_log).",
        "O(1), or O(M) for M lines trimmed.", true),
    command("emq.remove", Replies(edits::remove), "write", -3, &[PREFIX, JOB, optional(keyed("DEDUP", "id", ArgKind::Str))],
        "Removes a job not held by a flow: out of its lease, lane or set, its row, logs and dedup key deleted (EchoMQ's @remove_job).",
        "O(log N)", true),
    command("emq.reprocess", Replies(edits::reprocess), "write", 3, &[PREFIX, JOB],
        "Puts a dead job back in its lane or the flat queue, its last error cleared (EchoMQ's @reprocess).",
        "O(log N)", true),
    command("emq.qdrain", Replies(edits::qdrain), "write", -2, &[PREFIX, optional(keyed("SCHEDULE", "schedule", ArgKind::Token))],
        "Deletes every job of the flat queue (and of the schedule with SCHEDULE) with its row and logs (EchoMQ's admin @drain).",
        "O(N) for N jobs.", true),
    reader("emq.counts", Replies(reads::counts), -2, &[PREFIX, optional(many("state", ArgKind::Str)), optional(keyed("METRICS", "metrics", ArgKind::Block(&[many("name", ArgKind::Str)])))],
        "Counts the queue's flat pending, leased, scheduled and dead jobs, and its completed and failed counters (EchoMQ's @counts).",
        "O(S + M) for S states and M counters."),
    reader("emq.state", Replies(reads::state), 3, &[PREFIX, JOB],
        "Names where a job is: pending, active, scheduled, dead, awaiting_children, unknown or absent (EchoMQ's @state_lookup).",
        "O(1)"),
    reader("emq.depths", Replies(reads::depths), -3, &[PREFIX, many("lane", ArgKind::Str)],
        "Counts each lane's pending jobs (EchoMQ's @lane_counts).",
        "O(L) for L lanes."),
    reader("emq.maxed", Replies(reads::maxed), 2, &[PREFIX],
        "Refuses with EMQRATE when the queue's concurrency ceiling (P meta concurrency) is reached (EchoMQ's @is_maxed).",
        "O(1)"),
    reader("emq.ratettl", Replies(reads::ratettl), 3, &[PREFIX, arg("max", ArgKind::Int)],
        "The ms left of the queue's rate-limit window once its count reached max (0: P meta max), else 0 (EchoMQ's @rate_ttl).",
        "O(1)"),
    reader("emq.dead", Replies(dead::dead), -2, &[PREFIX, COUNT],
        "Lists dead jobs: id, lane, last error.",
        "O(log D + N) for N listed of D dead jobs."),
    command("emq.revive", Replies(dead::revive), "write", -3, &[PREFIX, many("job", ArgKind::Str)],
        "Puts dead jobs back in their lanes or the flat queue, their errors and stalls cleared, attempts kept.",
        "O(M log N) for M jobs.", true),
    reader("emq.lane", Replies(operate::lane), 3, &[PREFIX, LANE],
        "Shows a lane: depth, active, weight, limit, paused, ringed.",
        "O(R) for a ring of R lanes (the ringed field)."),
    reader("emq.queue", Replies(operate::queue), 2, &[PREFIX],
        "Shows the queue at a glance: ringed and paused lanes, leased, expired, scheduled, due and dead jobs, the next deadline and due time, max-stalled, completed and failed.",
        "O(log N)"),
    reader("emq.lanes", Replies(operate::lanes), -3, &[PREFIX, arg("cursor", ArgKind::Int), COUNT],
        "Iterates the queue's lanes as SCAN iterates keys: every lane with pending jobs, leases, a weight, a ceiling or a pause is returned at least once.",
        "O(1) for every call, about COUNT work; O(N) for a complete iteration."),
    reader("emq.stats", Replies(stats::stats), -2, &[PREFIX, optional(arg("what", ArgKind::OneOf(STATS_WHAT)))],
        "Shows the per-lane figures kept in memory: turns, jobs, the clamp that decided each turn, waits, busy time and shares, for one lane or the queue's top lanes; RESET forgets them.",
        "O(L) for the L lanes of the queue tracked."),
    command("emq.repair", Replies(operate::repair), "write", -3, &[PREFIX, arg("lanes", ArgKind::OneOf(REPAIR_LANES)), optional(keyed("DRYRUN", "dryrun", ArgKind::Token))],
        "Re-derives lanes' ring membership and active counts from their pending sets and the leases whose rows name them.",
        "O(R + L + N) for a ring of R lanes, L leases and N lanes repaired.", false),
    Command {
        spec: CommandSpec {
            name: "emq.turn",
            flags: "write fast",
            arity: 6,
            summary: "Internal: one served claim turn as the primary made it (emq.replicate command). Accepted only from the replication stream or an AOF load.",
            complexity: "O(K log N) where N is the number of the lane's pending jobs.",
            since: SINCE,
            args: &[PREFIX, LANE, arg("deadline", ArgKind::Int), arg("k", ArgKind::Int), arg("leaves", ArgKind::Int)],
            readonly: false,
            internal: true,
        },
        handler: Replies(claim::turn),
        // It replicates itself (a replica's own AOF), whatever the mode.
        deterministic: false,
    },
];

/// The spec of command `i` (what `lib.rs` registers).
pub fn spec(i: usize) -> &'static CommandSpec {
    &COMMANDS[i].spec
}

/// Runs command `i` of the table.
pub fn run<'a>(i: usize, ctx: &Ctx, argv: Argv<'a>) -> Result<Option<Reply>, Error> {
    let cmd = &COMMANDS[i];
    let call = Call::new(ctx, cmd.deterministic && config::replicate_command());
    match cmd.handler {
        Handler::Replies(body) => body(&call, argv).map(Some),
        Handler::MayBlock(body) => body(&call, argv),
    }
}

#[cfg(test)]
mod tests;
