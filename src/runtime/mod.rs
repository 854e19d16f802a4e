//! What every call shares above the module API: the call itself (context,
//! replication, counting), the module's configs, its counters and its log of
//! damage met; this node's hold on a queue's slot in a cluster.

pub mod call;
pub mod cluster;
pub mod config;
pub mod replicate;
pub mod report;
pub mod stats;

pub use call::Call;
