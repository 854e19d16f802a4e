//! The pure layer: what the module decides, over bytes and numbers alone.
//! Nothing here sees the server, so every rule is unit-tested without one.
//!
//! - `error`: every error reply, worded; `event`: the messages published;
//! - `grammar`: what a valid argument is;
//! - `layout`: EchoMQ's key names;
//! - `rate`: a lane's rate (GCRA), its bound and its next start;
//! - `schedule`: serviceability, the turn's `K`, the ring's moves;
//! - `row`: a job row's decisions (lease a head? die of stalls?);
//! - `figures`: the per-lane figures (turns, clamps, waits, busy time);
//! - `credit`: fairness by time (deficit round robin over the turn's K);
//! - `cluster`: a queue's hash slot and this node's hold on it.

pub mod cluster;
pub mod credit;
pub mod error;
pub mod event;
pub mod figures;
pub mod grammar;
pub mod layout;
pub mod rate;
pub mod row;
pub mod schedule;

#[cfg(test)]
mod fuzz;
