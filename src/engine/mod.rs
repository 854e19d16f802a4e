//! The operations, without argv: what each command does to a queue.
//!
//! - `turn`: one claim turn (open → plan → apply), and its replay;
//! - `wait`: claims that block; `timer`: the timer of waiting clients;
//! - `jobs`: a job's transitions (complete, retry, delay, extend);
//! - `flat`, `flat_claim`: EchoMQ's flat (lane-less) queue; `edits`: a
//!   job's data, progress and logs, and the flat queue's drain;
//! - `returns`: expired leases back; `promote`: due jobs back;
//! - `books`: the lanes such returns put jobs into, and the ring after;
//! - `lanes`: lane and queue administration; `rate`: rates and timed
//!   pauses; `next`: the lanes that come back from `P gnext` by themselves;
//! - `dead`: dead letters; `views`, `scan`: seeing a queue; `repair`;
//! - `counts`: EchoMQ's completed and failed counters; `reads`: its metric
//!   reads (counts, a job's state, lane depths, the ceiling, the rate's TTL);
//! - `figures`: the per-lane figures, recorded and seen (EMQ.STATS);
//! - `fairness`: fairness by time where a lease ends.

pub mod books;
pub mod counts;
pub mod dead;
pub mod edits;
pub mod fairness;
pub mod figures;
pub mod flat;
pub mod flat_claim;
pub mod jobs;
pub mod lanes;
pub mod next;
pub mod promote;
pub mod rate;
pub mod reads;
pub mod repair;
pub mod returns;
pub mod scan;
pub mod timer;
pub mod turn;
pub mod views;
pub mod wait;
