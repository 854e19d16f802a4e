//! Every line of `unsafe` in the module lives under this folder (the crate
//! root denies `unsafe_code` everywhere else, so the compiler keeps it so).
//! Above it the module sees byte slices, owned strings and key handles whose
//! lifetimes are tied to the command's context; nothing above it sees a raw
//! pointer.
//!
//! - `api`: calling the functions the server exported at load;
//! - `string`: strings the module owns ([`RStr`]) or borrows ([`Arg`], [`Argv`]);
//! - `names`: key names kept between calls (a queue's fixed keys as one set);
//! - `ctx`: the command's context: clock, flags, log, replication, calls;
//! - `key`: one handle per key per command ([`Key`]), ACL-checked when opened;
//! - `acl`: the caller's key permissions;
//! - `reply`: a command's reply, built first and sent whole;
//! - `block`: blocked clients and timers;
//! - `boundary`: the server's callbacks; errors and panics become replies;
//! - `register`: commands, their metadata and ACL categories;
//! - `alloc`: the server's allocator.

#[macro_use]
mod api;
pub mod acl;
pub mod alloc;
pub mod block;
pub mod boundary;
pub mod ctx;
pub mod key;
mod names;
pub mod register;
pub mod reply;
pub mod string;

pub use api::{detect_server, missing_api, release_constants, set_module_options, Word};
pub use ctx::{log_warning, Class, Ctx};
pub use key::{Key, Kind, Members};
pub use names::{name_set, release_all as release_names, KeyName, NameSet};
pub use reply::Reply;
pub use string::{word, Arg, Argv, RStr};
