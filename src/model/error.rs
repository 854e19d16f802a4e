//! Every error reply the module gives. Each begins with its class, as core
//! commands' do (`ERR`, `WRONGTYPE`, `NOPERM`) or as EchoMQ's scripts answer
//! (`EMQSTALE`, `EMQKIND`), and names what was wrong. An error is always
//! returned before a command's first write: it means nothing changed.

use std::ffi::CString;

/// Longest stretch of a client-supplied name quoted in an error.
const QUOTE_MAX: usize = 64;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// The server's standard arity error, built by the server itself.
    WrongArity,
    /// A key the command would touch holds the wrong type.
    WrongType,
    /// An unknown or misplaced keyword.
    Syntax,
    EmptyPrefix,
    EmptyLane,
    /// Cluster mode and the prefix has no non-empty `{hash tag}`.
    NoHashTag,
    /// Cluster mode and the queue's slot is migrating or importing key by
    /// key here, or is served elsewhere (a command let in by `ASKING`).
    SlotMoving,
    /// A client argument that is not what the command takes.
    BadArg {
        name: &'static str,
        expected: &'static str,
    },
    /// A stored value the command reads that is not what it must be:
    /// `what` of `field` in `key`.
    BadStored {
        what: &'static str,
        field: Vec<u8>,
        key: Vec<u8>,
        expected: &'static str,
    },
    /// Applying the command would overflow a stored counter.
    Overflow {
        what: &'static str,
        field: Vec<u8>,
        key: Vec<u8>,
    },
    /// EchoMQ's kind rule: a job id must begin with the configured kind.
    Kind(Vec<u8>),
    /// EchoMQ's fencing errors, worded as its scripts word them
    /// (`EMQSTALE complete token mismatch`, `EMQSTALE job gone`, …).
    Stale(&'static str),
    /// EchoMQ's `EMQLOCK job is locked`: a flow holds the job.
    Locked,
    /// EchoMQ's `EMQSTATE not dead`.
    NotDead,
    /// EchoMQ's `EMQRATE at concurrency ceiling`.
    AtCeiling,
    /// A panic was caught at the command boundary.
    Internal,
    /// An internal command called by a client (it runs only from the
    /// replication stream or an AOF load).
    InternalCommand(&'static str),
    /// The caller's user may not access `key`, a key the command would touch.
    NoPermission {
        key: Vec<u8>,
    },
    /// The caller's user may not publish on `channel`.
    NoChannelPermission {
        channel: Vec<u8>,
    },
    /// A BLOCK timeout past what the server accepts.
    TimeoutRange,
    /// `EMQ.TURN` does not fit this keyspace: `lane` is not the head of the
    /// ring `key` with enough jobs to lease.
    TurnMismatch {
        lane: Vec<u8>,
        key: Vec<u8>,
    },
}

pub const LEASE_RANGE: &str = "an integer from 1 to 1099511627776";
pub const WEIGHT_RANGE: &str = "an integer >= 1";
pub const INTEGER: &str = "an integer";
pub const TIMEOUT_RANGE: &str = "an integer >= 0";
pub const COUNT_RANGE: &str = "an integer >= 1";
/// EMQ.POLICY fairness time's QUANTUM.
pub const QUANTUM_RANGE: &str = "an integer from 1 to 2147483648";
/// A fairness policy as stored in `P meta`.
pub const FAIRNESS_TEXT: &str = "time with a quantum from 1 to 2147483648, or absent";
/// The count of a batch of lanes (`LANES n lane …`).
pub const NUMLANES: &str = "an integer from 1 to the number of lanes that follow";
pub const LIMIT_RANGE: &str = "an integer >= 1 or NONE";
pub const DELAY_RANGE: &str = "an integer from 0 to 1099511627776";
pub const MAX_RANGE: &str = "an integer >= 0";
pub const BOOLEAN: &str = "0 or 1";
/// A rate's count and burst (`model::rate::N_MAX`), and its period
/// (`model::rate::PERIOD_MAX_MS`, a year).
pub const RATE_N_RANGE: &str = "an integer from 1 to 1000000000";
pub const RATE_TEXT: &str = "of the form '<n> <period_ms> <burst>'";
pub const PERIOD_RANGE: &str = "an integer from 1 to 31536000000";

impl Error {
    pub fn bad_arg(name: &'static str, expected: &'static str) -> Error {
        Error::BadArg { name, expected }
    }

    pub fn bad_stored(what: &'static str, field: &[u8], key: &[u8], expected: &'static str) -> Error {
        Error::BadStored {
            what,
            field: field.to_vec(),
            key: key.to_vec(),
            expected,
        }
    }

    /// The reply text; `None` for [`Error::WrongArity`], which the server words.
    pub fn message(&self) -> Option<String> {
        let text = match self {
            Error::WrongArity => return None,
            Error::WrongType => {
                "WRONGTYPE Operation against a key holding the wrong kind of value".to_string()
            }
            Error::Syntax => "ERR syntax error".to_string(),
            Error::EmptyPrefix => "ERR the prefix must not be empty".to_string(),
            Error::EmptyLane => "ERR the lane must not be empty".to_string(),
            Error::NoHashTag => {
                "ERR in cluster mode the prefix must contain a non-empty hash tag, e.g. emq:{orders}:"
                    .to_string()
            }
            Error::SlotMoving => "TRYAGAIN the queue's slot is being migrated key by key; \
                 try again when the move is done"
                .to_string(),
            Error::BadArg { name, expected } => format!("ERR {name} must be {expected}"),
            Error::BadStored {
                what,
                field,
                key,
                expected,
            } => format!(
                "ERR {what} '{}' in '{}' is not {expected}",
                quote(field),
                quote(key)
            ),
            Error::Overflow { what, field, key } => {
                format!("ERR {what} '{}' in '{}' would overflow", quote(field), quote(key))
            }
            // EchoMQ's own wording (its host matches on the class word).
            Error::Kind(kind) => format!("EMQKIND job id must be {}-namespaced", quote(kind)),
            Error::Locked => "EMQLOCK job is locked".to_string(),
            Error::NotDead => "EMQSTATE not dead".to_string(),
            Error::AtCeiling => "EMQRATE at concurrency ceiling".to_string(),
            Error::Stale(what) => format!("EMQSTALE {what}"),
            Error::Internal => "ERR internal error in the emq module (a bug: please report it)".to_string(),
            Error::InternalCommand(name) => format!(
                "ERR {name} is internal: it runs only from the replication stream or an AOF load"
            ),
            Error::NoPermission { key } => format!(
                "NOPERM this user has no permissions to access the '{}' key",
                quote(key)
            ),
            Error::NoChannelPermission { channel } => format!(
                "NOPERM this user has no permissions to access the '{}' channel",
                quote(channel)
            ),
            Error::TimeoutRange => "ERR BLOCK timeout is out of range".to_string(),
            Error::TurnMismatch { lane, key } => format!(
                "ERR EMQ.TURN: lane '{}' is not at the head of '{}' with enough jobs to lease (this keyspace differs from the primary's)",
                quote(lane),
                quote(key)
            ),
        };
        Some(text)
    }

    pub fn message_c(&self) -> Option<CString> {
        // quote() leaves no NUL, so this cannot fail; fall back anyway.
        self.message()
            .map(|m| CString::new(m).unwrap_or_else(|_| c"ERR invalid error text".to_owned()))
    }
}

/// Printable ASCII as is, everything else as `\xNN`, at most [`QUOTE_MAX`]
/// bytes: names come from clients and may hold any byte, even NUL or CRLF.
pub fn quote(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().min(QUOTE_MAX) + 8);
    for &b in bytes.iter().take(QUOTE_MAX) {
        if (0x20..0x7f).contains(&b) && b != b'\\' && b != b'\'' {
            out.push(b as char);
        } else {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    if bytes.len() > QUOTE_MAX {
        out.push_str("...");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_message_starts_with_its_class() {
        let all = [
            Error::WrongType,
            Error::Syntax,
            Error::EmptyPrefix,
            Error::EmptyLane,
            Error::NoHashTag,
            Error::SlotMoving,
            Error::bad_arg("lease", LEASE_RANGE),
            Error::bad_stored("weight of lane", b"a", b"p:gweight", INTEGER),
            Error::Overflow {
                what: "active count of lane",
                field: b"a".to_vec(),
                key: b"k".to_vec(),
            },
            Error::Kind(b"JOB".to_vec()),
            Error::Stale("job gone"),
            Error::Locked,
            Error::NotDead,
            Error::AtCeiling,
            Error::Internal,
            Error::InternalCommand("EMQ.TURN"),
            Error::TurnMismatch {
                lane: b"a".to_vec(),
                key: b"p:ring".to_vec(),
            },
            Error::NoPermission {
                key: b"q:ring".to_vec(),
            },
            Error::NoChannelPermission {
                channel: b"q:events".to_vec(),
            },
            Error::TimeoutRange,
        ];
        for e in all {
            let m = e.message().expect("worded by the module");
            let class = m.split(' ').next().unwrap();
            assert!(
                [
                    "ERR",
                    "WRONGTYPE",
                    "NOPERM",
                    "TRYAGAIN",
                    "EMQKIND",
                    "EMQSTALE",
                    "EMQLOCK",
                    "EMQSTATE",
                    "EMQRATE"
                ]
                .contains(&class),
                "{m}"
            );
        }
        assert_eq!(Error::WrongArity.message(), None);
    }

    #[test]
    fn echomqs_errors_word_for_word() {
        assert_eq!(
            Error::Kind(b"JOB".to_vec()).message().unwrap(),
            "EMQKIND job id must be JOB-namespaced"
        );
        assert_eq!(
            Error::Stale("complete token mismatch").message().unwrap(),
            "EMQSTALE complete token mismatch"
        );
    }

    #[test]
    fn names_are_quoted_safely() {
        assert_eq!(quote(b"lane-1"), "lane-1");
        assert_eq!(quote(b"a\0b\r\n'"), "a\\x00b\\x0d\\x0a\\x27");
        let long = vec![b'x'; 100];
        assert_eq!(quote(&long), format!("{}...", "x".repeat(64)));
        let m = Error::bad_stored("limit of lane", b"\0", b"k", INTEGER)
            .message_c()
            .unwrap();
        assert_eq!(
            m.to_str().unwrap(),
            "ERR limit of lane '\\x00' in 'k' is not an integer"
        );
    }
}
