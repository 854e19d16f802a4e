//! EchoMQ's keyspace (docs/keyspace.md): every key of a queue is its prefix
//! `P` followed by a suffix — a fixed one (`P ring`, `P active`, …) or one
//! naming a lane (`P g:<lane>:pending`) or a job (`P job:<id>`) — so the
//! prefix is every command's one declared key.

/// A queue's fixed keys: `P` followed by its entry in [`SUFFIXES`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fixed {
    /// list: the rota, each serviceable lane once.
    Ring,
    /// set: paused lanes.
    Paused,
    /// hash: lane → weight.
    Weight,
    /// hash: lane → concurrency ceiling.
    Limit,
    /// hash: lane → leased jobs.
    Active,
    /// zset: leased job → lease deadline (ms).
    Leases,
    /// zset: delayed job → due time (ms).
    Schedule,
    /// zset: dead jobs, score 0.
    Dead,
    /// zset: EchoMQ's flat queue (jobs with no lane), score 0.
    Flat,
    /// list: EchoMQ's wake-up for consumers parked on `BLPOP P wake`.
    Wake,
    /// hash: queue-wide settings (`paused`, `max-stalled`).
    Meta,
    /// hash: `count` of completed jobs.
    Completed,
    /// hash: `count` of failed jobs.
    Failed,
    /// hash: lane → `"<n> <period_ms> <burst>"`.
    Rate,
    /// hash: lane → the rate's theoretical arrival time (ms).
    Tat,
    /// zset: lane → when it may be served again (throttled or paused until).
    Next,
    /// hash: lane → its credit (µs) under fairness by time.
    Credit,
    /// hash: lane → its cost (µs a job) under fairness by time.
    Cost,
}

/// The suffixes, in the order of [`Fixed`].
pub const SUFFIXES: &[&[u8]] = &[
    b"ring",
    b"paused",
    b"gweight",
    b"glimit",
    b"gactive",
    b"active",
    b"schedule",
    b"dead",
    b"pending",
    b"wake",
    b"meta",
    b"metrics:completed",
    b"metrics:failed",
    b"grate",
    b"gtat",
    b"gnext",
    b"gcredit",
    b"gcost",
];

/// How many elements `P wake` keeps (`LTRIM P wake 0 63`).
pub const WAKE_KEEP: usize = 64;

/// A job row's fields (`P job:<id>`).
pub mod field {
    pub const STATE: &[u8] = b"state";
    pub const ATTEMPTS: &[u8] = b"attempts";
    pub const PAYLOAD: &[u8] = b"payload";
    pub const GROUP: &[u8] = b"group";
    pub const LAST_ERROR: &[u8] = b"last_error";
    pub const STALLED: &[u8] = b"stalled";
    /// `P metrics:*`'s one field.
    pub const COUNT: &[u8] = b"count";
    /// `P meta`: the whole queue is paused while present.
    pub const PAUSED: &[u8] = b"paused";
    /// `P meta`: the stall threshold (EMQ.POLICY).
    pub const MAX_STALLED: &[u8] = b"max-stalled";
    /// `P meta`: the fairness policy (`time`; absent: count).
    pub const FAIRNESS: &[u8] = b"fairness";
}

/// What a death by stall writes to the row's `last_error`.
pub const STALLED_ERROR: &[u8] = b"stalled";

/// `P g:<lane>:pending`, the lane's waiting jobs, in pieces to be joined
/// without a heap allocation. The name is not injective across queues: when
/// one prefix extends another, a lane name holding `:g:` can name another
/// queue's key (prefix `a:` with lane `x:g:y` and prefix `a:g:x:` with lane
/// `y` both give `a:g:x:g:y:pending`). Give queues prefixes that do not
/// extend one another (docs/keyspace.md says so).
pub fn pending_parts<'a>(prefix: &'a [u8], lane: &'a [u8]) -> [&'a [u8]; 4] {
    [prefix, b"g:", lane, b":pending"]
}

pub fn pending(prefix: &[u8], lane: &[u8]) -> Vec<u8> {
    pending_parts(prefix, lane).concat()
}

/// `P job:<id>`, the job's row.
pub fn row_parts<'a>(prefix: &'a [u8], job: &'a [u8]) -> [&'a [u8]; 3] {
    [prefix, b"job:", job]
}

/// `P job:<id>:logs`, the job's log lines.
pub fn logs_parts<'a>(prefix: &'a [u8], job: &'a [u8]) -> [&'a [u8]; 4] {
    [prefix, b"job:", job, b":logs"]
}

/// `P job:<id>:lock`, EchoMQ's mark of a job a flow holds.
pub fn lock_parts<'a>(prefix: &'a [u8], job: &'a [u8]) -> [&'a [u8]; 4] {
    [prefix, b"job:", job, b":lock"]
}

/// `P de:<id>`, a dedup key (a string: the job it names).
pub fn dedup_parts<'a>(prefix: &'a [u8], id: &'a [u8]) -> [&'a [u8]; 3] {
    [prefix, b"de:", id]
}

/// `P limiter`, EchoMQ's rate limiter's counter (a string with a TTL).
pub fn limiter_parts(prefix: &[u8]) -> [&[u8]; 2] {
    [prefix, b"limiter"]
}

/// `P events`, the channel EchoMQ publishes a job's progress on.
pub fn events_parts(prefix: &[u8]) -> [&[u8]; 2] {
    [prefix, b"events"]
}

/// The lane a `P g:<lane>:pending` key names, if it is one of `prefix`'s.
pub fn lane_of_pending<'a>(prefix: &[u8], key: &'a [u8]) -> Option<&'a [u8]> {
    let rest = key.strip_prefix(prefix)?.strip_prefix(b"g:")?;
    rest.strip_suffix(b":pending")
}

/// Whether every `P…` key hashes to the prefix's slot: the prefix itself
/// holds a `{` with a `}` after it and something in between (the server's
/// rule looks at the first `{` and the first `}` after it).
pub fn has_hash_tag(prefix: &[u8]) -> bool {
    let Some(open) = prefix.iter().position(|&b| b == b'{') else {
        return false;
    };
    match prefix[open + 1..].iter().position(|&b| b == b'}') {
        Some(len) => len > 0,
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fixed_key_has_its_suffix() {
        assert_eq!(SUFFIXES[Fixed::Ring as usize], b"ring");
        assert_eq!(SUFFIXES[Fixed::Leases as usize], b"active");
        assert_eq!(SUFFIXES[Fixed::Flat as usize], b"pending");
        assert_eq!(SUFFIXES[Fixed::Next as usize], b"gnext");
        assert_eq!(SUFFIXES[Fixed::Cost as usize], b"gcost");
        assert_eq!(SUFFIXES.len(), Fixed::Cost as usize + 1);
    }

    #[test]
    fn names() {
        assert_eq!(pending(b"emq:{o}:", b"PLR1"), b"emq:{o}:g:PLR1:pending");
        assert_eq!(row_parts(b"emq:{o}:", b"JOB1").concat(), b"emq:{o}:job:JOB1");
        assert_eq!(
            logs_parts(b"emq:{o}:", b"JOB1").concat(),
            b"emq:{o}:job:JOB1:logs"
        );
        assert_eq!(lane_of_pending(b"p:", b"p:g:a:b:pending"), Some(&b"a:b"[..]));
        assert_eq!(lane_of_pending(b"p:", b"q:g:a:pending"), None);
    }

    #[test]
    fn a_prefix_that_extends_another_can_alias_its_keys() {
        assert_eq!(pending(b"a:", b"x:g:y"), pending(b"a:g:x:", b"y"));
    }

    #[test]
    fn hash_tags() {
        assert!(has_hash_tag(b"emq:{orders}:"));
        assert!(has_hash_tag(b"{a}"));
        assert!(!has_hash_tag(b"emq:orders:"));
        assert!(!has_hash_tag(b"emq:{}:"));
        assert!(!has_hash_tag(b"emq:{orders:"));
        // The first '{' decides: "{}{x}" has an empty tag.
        assert!(!has_hash_tag(b"{}{x}"));
        assert!(!has_hash_tag(b"emq:}{"));
        let long = format!("q:{{{}}}:", "t".repeat(300));
        assert!(has_hash_tag(long.as_bytes()));
    }
}
