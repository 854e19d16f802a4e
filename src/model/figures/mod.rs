//! The per-lane figures of SPEC section 8, as pure arithmetic: a job's mint
//! time from its branded id (`brand`), the log-bucketed histogram of waits
//! (`hist`), one lane's totals and sliding window (`tally`), and every
//! queue's figures within their bounds (`store`). The engine records into a
//! [`Store`] where turns are decided and leases end; nothing here sees the
//! server.

pub mod brand;
pub mod hist;
pub mod store;
pub mod tally;

pub use store::{Keep, QueueFigures, Served, Store};
pub use tally::{Clock, Figures, Tally};
