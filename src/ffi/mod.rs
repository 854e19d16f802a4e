//! Every line of `unsafe` in the module lives under this folder (the crate
//! root denies `unsafe_code` everywhere else, so the compiler keeps it so).
//! Above it the module sees byte slices, owned strings and key handles whose
//! lifetimes are tied to the command's context; nothing above it sees a raw
//! pointer. Inside, each file imports only those listed before it:
//!
//! - `api`: calling the functions the server exported at load; constants;
//! - `string`: strings the module owns ([`RStr`]) or borrows ([`Arg`], [`Argv`]);
//! - `names`: key names kept between calls (a queue's fixed keys as one set);
//! - `slots`: the one handle per key a context keeps;
//! - `guard`: the caller's key permissions, checked per key;
//! - `ctx`: the command's context: clock, flags, log, notifications;
//! - `acl`: who the caller is, and the guard set for it;
//! - `key`: views of the handles ([`Key`]), ACL-checked when opened; `hash`, `zset`: their hash and sorted-set reads and writes;
//! - `call`: the calls the key API has no equivalent for;
//! - `propagate`: replication;
//! - `reply`: a command's reply, built first and sent whole;
//! - `boundary`: the server's callbacks; errors and panics become replies;
//! - `block`: blocked clients and timers; `events`: the server's events;
//! - `docs`: a command's metadata; `register`: commands and ACL categories;
//! - `alloc`: the server's allocator.

#[macro_use]
mod api;

mod acl;
pub mod alloc;
pub mod block;
mod boundary;
mod call;
mod ctx;
pub mod docs;
pub mod events;
mod guard;
mod hash;
mod key;
mod names;
mod propagate;
pub mod register;
mod reply;
mod slots;
mod string;
mod zset;

pub use api::{detect_server, missing_api, release_constants, set_module_options, Word};
pub use boundary::with_module_ctx;
pub use ctx::{log_warning, Class, Ctx};
pub use key::{Key, Kind};
pub use names::{name_set, release_all as release_names, KeyName, NameSet};
pub use reply::{Job, Jobs, Reply};
pub use string::{word, Arg, Argv, RStr, Text};
