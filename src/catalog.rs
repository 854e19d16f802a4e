//! The command table: name, handler, flags, arity and the documentation that
//! `COMMAND INFO` / `COMMAND DOCS` show. `lib.rs` registers what is here.

use crate::commands::{claim, dead, lanes, lifecycle, operate, repair, Handler};

/// How an argument is documented (`REDISMODULE_ARG_TYPE_*`).
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// The prefix: the one declared key.
    Key,
    Str,
    Int,
    Double,
    /// A keyword alone (`NONE`).
    Token,
    /// One of the sub-arguments.
    OneOf(&'static [ArgDoc]),
    /// The sub-arguments in sequence.
    Block(&'static [ArgDoc]),
}

#[derive(Debug, Clone, Copy)]
pub struct ArgDoc {
    pub name: &'static str,
    pub kind: Kind,
    pub token: Option<&'static str>,
    pub optional: bool,
    pub multiple: bool,
}

const fn arg(name: &'static str, kind: Kind) -> ArgDoc {
    ArgDoc {
        name,
        kind,
        token: None,
        optional: false,
        multiple: false,
    }
}

const fn many(name: &'static str, kind: Kind) -> ArgDoc {
    ArgDoc {
        multiple: true,
        ..arg(name, kind)
    }
}

pub struct CommandDoc {
    pub name: &'static str,
    pub handler: Handler,
    /// `CreateCommand` flags.
    pub flags: &'static str,
    /// The server's convention: n = exactly n, -n = at least n (name included).
    pub arity: i32,
    pub summary: &'static str,
    pub complexity: &'static str,
    pub args: &'static [ArgDoc],
    /// Whether the command only reads (its key spec is RO, else RW).
    pub readonly: bool,
    /// Whether its effects follow from the keyspace and its arguments alone
    /// (no clock, no config): with `emq.replicate command` it is replicated
    /// as itself.
    pub deterministic: bool,
    /// Only for the replication stream and AOF loading: outside the `emq`
    /// ACL category.
    pub internal: bool,
}

pub const SINCE: &str = "0.1.0";

const PREFIX: ArgDoc = arg("prefix", Kind::Key);
const LANE: ArgDoc = arg("lane", Kind::Str);
const LEASE: ArgDoc = arg("lease", Kind::Int);
const TOKEN: ArgDoc = arg("token", Kind::Int);
const JOBS: ArgDoc = many("job", Kind::Str);
const MINT_JOB: &[ArgDoc] = &[arg("mint", Kind::Double), arg("job", Kind::Str)];
const LIMIT_VALUE: &[ArgDoc] = &[
    arg("limit", Kind::Int),
    ArgDoc {
        token: Some("NONE"),
        ..arg("none", Kind::Token)
    },
];
const DELIVERIES_VALUE: &[ArgDoc] = &[
    arg("max-deliveries", Kind::Int),
    ArgDoc {
        token: Some("NONE"),
        ..arg("none", Kind::Token)
    },
];
const REPAIR_LANES: &[ArgDoc] = &[
    LANE,
    ArgDoc {
        token: Some("LANES"),
        ..arg(
            "batch",
            Kind::Block(&[arg("numlanes", Kind::Int), many("lane", Kind::Str)]),
        )
    },
];
const BLOCK: ArgDoc = ArgDoc {
    token: Some("BLOCK"),
    optional: true,
    ..arg("timeout", Kind::Int)
};
const COUNT: ArgDoc = ArgDoc {
    token: Some("COUNT"),
    optional: true,
    ..arg("count", Kind::Int)
};

pub const COMMANDS: &[CommandDoc] = &[
    CommandDoc {
        name: "emq.claim",
        handler: Handler::MayBlock(claim::claim),
        flags: "write fast blocking",
        arity: -3,
        summary: "Rotates the lane ring one step and leases the rotated lane's head job; with BLOCK, waits for a serviceable lane.",
        complexity: "O(log N) where N is the number of the lane's pending jobs.",
        args: &[PREFIX, LEASE, BLOCK],
        readonly: false,
        deterministic: false,
        internal: false,
    },
    CommandDoc {
        name: "emq.wclaim",
        handler: Handler::MayBlock(claim::wclaim),
        flags: "write fast blocking",
        arity: -3,
        summary: "Rotates the lane ring one step and leases K = min(weight, depth, headroom) heads of the rotated lane; with BLOCK, waits for a serviceable lane.",
        complexity: "O(K log N) where N is the number of the lane's pending jobs.",
        args: &[PREFIX, LEASE, BLOCK],
        readonly: false,
        deterministic: false,
        internal: false,
    },
    CommandDoc {
        name: "emq.weight",
        handler: Handler::Replies(lanes::weight),
        flags: "write fast",
        arity: 4,
        summary: "Sets a lane's weight: its share of heads per turn.",
        complexity: "O(1)",
        args: &[PREFIX, LANE, arg("weight", Kind::Int)],
        readonly: false,
        deterministic: true,
        internal: false,
    },
    CommandDoc {
        name: "emq.enqueue",
        handler: Handler::Replies(lifecycle::enqueue),
        flags: "write deny-oom fast",
        arity: -5,
        summary: "Adds jobs to a lane (ZADD NX), skipping leased and dead ids, and rings the lane if it became serviceable.",
        complexity: "O(M log N) for M jobs added to a lane of N.",
        args: &[PREFIX, LANE, many("data", Kind::Block(MINT_JOB))],
        readonly: false,
        deterministic: true,
        internal: false,
    },
    CommandDoc {
        name: "emq.ack",
        handler: Handler::Replies(lifecycle::ack),
        flags: "write fast",
        arity: -4,
        summary: "Completes jobs leased under a token.",
        complexity: "O(M log L) for M jobs and L leases.",
        args: &[PREFIX, TOKEN, JOBS],
        readonly: false,
        deterministic: true,
        internal: false,
    },
    CommandDoc {
        name: "emq.nack",
        handler: Handler::Replies(lifecycle::nack),
        flags: "write fast",
        arity: -4,
        summary: "Returns jobs leased under a token to their lanes at their mint scores, counting the return; a job at its max-deliveries dies instead.",
        complexity: "O(M log N) for M jobs.",
        args: &[PREFIX, TOKEN, JOBS],
        readonly: false,
        // A death is stamped with the clock.
        deterministic: false,
        internal: false,
    },
    CommandDoc {
        name: "emq.extend",
        handler: Handler::Replies(lifecycle::extend),
        flags: "write fast",
        arity: -5,
        summary: "Moves the lease deadline of jobs leased under a token to max(token, now + lease).",
        complexity: "O(M log L) for M jobs and L leases.",
        args: &[PREFIX, TOKEN, LEASE, JOBS],
        readonly: false,
        deterministic: false,
        internal: false,
    },
    CommandDoc {
        name: "emq.reap",
        handler: Handler::Replies(lifecycle::reap),
        flags: "write",
        arity: -2,
        summary: "Returns expired leases to their lanes (as NACK), earliest deadline first.",
        complexity: "O(M log N) for M reaped jobs.",
        args: &[PREFIX, COUNT],
        readonly: false,
        deterministic: false,
        internal: false,
    },
    CommandDoc {
        name: "emq.limit",
        handler: Handler::Replies(lanes::limit),
        flags: "write",
        arity: 4,
        summary: "Sets or removes a lane's concurrency ceiling.",
        complexity: "O(1), or O(R) for a ring of R lanes when the lane leaves it.",
        args: &[PREFIX, LANE, arg("limit", Kind::OneOf(LIMIT_VALUE))],
        readonly: false,
        deterministic: true,
        internal: false,
    },
    CommandDoc {
        name: "emq.pause",
        handler: Handler::Replies(lanes::pause),
        flags: "write",
        arity: 3,
        summary: "Takes a lane out of service.",
        complexity: "O(R) for a ring of R lanes.",
        args: &[PREFIX, LANE],
        readonly: false,
        deterministic: true,
        internal: false,
    },
    CommandDoc {
        name: "emq.resume",
        handler: Handler::Replies(lanes::resume),
        flags: "write fast",
        arity: 3,
        summary: "Puts a paused lane back in service.",
        complexity: "O(1)",
        args: &[PREFIX, LANE],
        readonly: false,
        deterministic: true,
        internal: false,
    },
    CommandDoc {
        name: "emq.reassign",
        handler: Handler::Replies(lanes::reassign),
        flags: "write",
        arity: 5,
        summary: "Moves a pending job to another lane, keeping its mint score.",
        complexity: "O(log N), or O(R) for a ring of R lanes when a lane leaves it.",
        args: &[PREFIX, arg("job", Kind::Str), arg("from", Kind::Str), arg("to", Kind::Str)],
        readonly: false,
        deterministic: true,
        internal: false,
    },
    CommandDoc {
        name: "emq.lane",
        handler: Handler::Replies(lanes::lane),
        flags: "readonly",
        arity: 3,
        summary: "Shows a lane: depth, active, weight, limit, paused, ringed.",
        complexity: "O(R) for a ring of R lanes (the ringed field).",
        args: &[PREFIX, LANE],
        readonly: true,
        deterministic: false,
        internal: false,
    },
    CommandDoc {
        name: "emq.policy",
        handler: Handler::Replies(dead::policy),
        flags: "write fast",
        arity: 4,
        summary: "Sets or removes the queue's max-deliveries: how many leases a job gets before it dies.",
        complexity: "O(1)",
        args: &[PREFIX, arg("setting", Kind::Str), arg("value", Kind::OneOf(DELIVERIES_VALUE))],
        readonly: false,
        deterministic: true,
        internal: false,
    },
    CommandDoc {
        name: "emq.dead",
        handler: Handler::Replies(dead::dead),
        flags: "readonly",
        arity: -2,
        summary: "Lists the oldest dead jobs: job, lane, when it died.",
        complexity: "O(log D + N) for N listed of D dead jobs.",
        args: &[PREFIX, COUNT],
        readonly: true,
        deterministic: false,
        internal: false,
    },
    CommandDoc {
        name: "emq.revive",
        handler: Handler::Replies(dead::revive),
        flags: "write",
        arity: -3,
        summary: "Puts dead jobs back in their lanes at their mint scores.",
        complexity: "O(M log N) for M jobs.",
        args: &[PREFIX, JOBS],
        readonly: false,
        deterministic: true,
        internal: false,
    },
    CommandDoc {
        name: "emq.queue",
        handler: Handler::Replies(operate::queue),
        flags: "readonly",
        arity: 2,
        summary: "Shows the queue at a glance: ringed and paused lanes, leased and expired jobs, the next lease deadline, dead jobs, max-deliveries.",
        complexity: "O(log L) for L leased jobs.",
        args: &[PREFIX],
        readonly: true,
        deterministic: false,
        internal: false,
    },
    CommandDoc {
        name: "emq.lanes",
        handler: Handler::Replies(operate::lanes),
        flags: "readonly",
        arity: -3,
        summary: "Iterates the queue's lanes as SCAN iterates keys: every lane with pending jobs, leases, a weight, a ceiling or a pause is returned at least once.",
        complexity: "O(1) for every call, about COUNT work; O(N) for a complete iteration.",
        args: &[PREFIX, arg("cursor", Kind::Int), COUNT],
        readonly: true,
        deterministic: false,
        internal: false,
    },
    CommandDoc {
        name: "emq.repair",
        handler: Handler::Replies(repair::repair),
        flags: "write",
        arity: -3,
        summary: "Re-derives lanes' ring membership and active counts from their pending sets and the lease records naming them; removes their records that have no lease.",
        complexity: "O(R + J + N) for a ring of R lanes, J lease records and N lanes repaired.",
        args: &[
            PREFIX,
            arg("lanes", Kind::OneOf(REPAIR_LANES)),
            ArgDoc {
                token: Some("DRYRUN"),
                optional: true,
                ..arg("dryrun", Kind::Token)
            },
        ],
        readonly: false,
        // It reads the ring and the records first; replicated as effects.
        deterministic: false,
        internal: false,
    },
    CommandDoc {
        name: "emq.turn",
        handler: Handler::Replies(claim::replay_turn),
        flags: "write fast",
        arity: 6,
        summary: "Internal: one served claim turn as the primary made it (emq.replicate command). Accepted only from the replication stream or an AOF load.",
        complexity: "O(K log N) where N is the number of the lane's pending jobs.",
        args: &[
            PREFIX,
            LANE,
            arg("deadline", Kind::Int),
            arg("k", Kind::Int),
            arg("leaves", Kind::Int),
        ],
        readonly: false,
        // It replicates itself (a replica's own AOF), whatever the mode.
        deterministic: false,
        internal: true,
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    /// The smallest argument count (name included) the documented arguments allow.
    pub fn min_argc(args: &[ArgDoc]) -> usize {
        1 + args
            .iter()
            .filter(|a| !a.optional)
            .map(|a| match a.kind {
                Kind::Block(subs) => subs.len(),
                _ => 1,
            })
            .sum::<usize>()
    }

    #[test]
    fn arity_agrees_with_the_documented_arguments() {
        for c in COMMANDS {
            let min = min_argc(c.args);
            let variadic = c.args.iter().any(|a| a.multiple || a.optional);
            let expect = if variadic { -(min as i32) } else { min as i32 };
            assert_eq!(c.arity, expect, "{}", c.name);
            assert!(
                matches!(c.args[0].kind, Kind::Key),
                "{}: the prefix is the first argument",
                c.name
            );
            assert!(
                c.flags.contains(if c.readonly { "readonly" } else { "write" }),
                "{}",
                c.name
            );
        }
    }

    #[test]
    fn names_are_unique_and_lower_case() {
        let mut names: Vec<&str> = COMMANDS.iter().map(|c| c.name).collect();
        names.sort();
        names.dedup();
        assert_eq!(names.len(), COMMANDS.len());
        assert!(names
            .iter()
            .all(|n| n.starts_with("emq.") && n.to_lowercase() == *n));
    }
}
