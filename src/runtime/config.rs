//! The module's configs (`CONFIG SET emq.<name>`, the config file, the
//! command line, or `loadmodule … <name> <value>`), registered through the
//! crate's `redis_module!` (`lib.rs`). Commands read them on the main
//! thread; atomics and a mutex only make the statics safe to share.

use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;

use redis_module::configuration::{ConfigurationContext, ConfigurationValue};
use redis_module::{enum_configuration, RedisError, RedisString};

/// `emq.max-claim` (default 1000): the most heads one claim turn serves,
/// whatever the weight or the depth, so that one call cannot stall the
/// server (`@gbclaim` and `@gwclaim` have no cap).
pub static MAX_CLAIM: AtomicI64 = AtomicI64::new(MAX_CLAIM_DEFAULT);
pub const MAX_CLAIM_DEFAULT: i64 = 1000;

pub fn max_claim() -> i64 {
    MAX_CLAIM.load(Ordering::Relaxed).max(1)
}

/// `emq.reap-on-claim`: how many expired leases a claim returns before its
/// turn (0: none; a queue then needs `EMQ.REAP` or waiting workers' timer).
pub static REAP_ON_CLAIM: AtomicI64 = AtomicI64::new(REAP_ON_CLAIM_DEFAULT);
pub const REAP_ON_CLAIM_DEFAULT: i64 = 16;

pub fn reap_on_claim() -> usize {
    usize::try_from(REAP_ON_CLAIM.load(Ordering::Relaxed)).unwrap_or(0)
}

/// `emq.stats-window` (default 60000 ms): the sliding window of the
/// per-lane figures (EMQ.STATS), kept at a resolution of a tenth of it.
pub static STATS_WINDOW: AtomicI64 = AtomicI64::new(STATS_WINDOW_DEFAULT);
pub const STATS_WINDOW_DEFAULT: i64 = 60_000;

pub fn stats_window() -> i64 {
    STATS_WINDOW.load(Ordering::Relaxed).max(10)
}

/// `emq.stats-lanes` (default 100000): the most lanes the figures track on
/// this server (the lane idle longest dropped first); 0 tracks none.
pub static STATS_LANES: AtomicI64 = AtomicI64::new(STATS_LANES_DEFAULT);
pub const STATS_LANES_DEFAULT: i64 = 100_000;

pub fn stats_lanes() -> usize {
    usize::try_from(STATS_LANES.load(Ordering::Relaxed)).unwrap_or(0)
}

/// `emq.max-passes` (default 64): the most lanes a claim under fairness by
/// time passes over for their debt before it serves one anyway.
pub static MAX_PASSES: AtomicI64 = AtomicI64::new(MAX_PASSES_DEFAULT);
pub const MAX_PASSES_DEFAULT: i64 = 64;

pub fn max_passes() -> usize {
    usize::try_from(MAX_PASSES.load(Ordering::Relaxed)).unwrap_or(0)
}

enum_configuration! {
    /// `emq.replicate`: `effects` (the default: replicas and AOF readers
    /// need no module) or `command` (a served claim replicates as one
    /// `EMQ.TURN`, the clock-free commands as themselves; every reader needs
    /// the module).
    #[allow(non_camel_case_types)]
    pub enum Replicate {
        effects = 0,
        command = 1,
    }
}

/// The `emq.replicate` value, kept as a flag (read on every claim).
pub struct ReplicateSetting(AtomicBool);

pub static REPLICATE: ReplicateSetting = ReplicateSetting(AtomicBool::new(false));

pub fn replicate_command() -> bool {
    REPLICATE.0.load(Ordering::Relaxed)
}

impl ConfigurationValue<Replicate> for ReplicateSetting {
    fn get(&self, _: &ConfigurationContext) -> Replicate {
        if self.0.load(Ordering::Relaxed) {
            Replicate::command
        } else {
            Replicate::effects
        }
    }

    fn set(&self, _: &ConfigurationContext, value: Replicate) -> Result<(), RedisError> {
        self.0
            .store(matches!(value, Replicate::command), Ordering::Relaxed);
        Ok(())
    }
}

/// `emq.job-kind` (default `JOB`): the prefix every job id must begin with
/// (EchoMQ's kind rule; empty admits any id).
///
/// The server does not free the string a config getter returns: the module
/// keeps it (here, as the address of the last one handed out) and frees it
/// at the next get, when the server is done with it (`make memcheck` caught
/// the leak of a getter that gave its string away).
pub struct JobKind(Mutex<Vec<u8>>, Mutex<usize>);

pub static JOB_KIND: JobKind = JobKind(Mutex::new(Vec::new()), Mutex::new(0));
pub const JOB_KIND_DEFAULT: &str = "JOB";

/// The kind in force (read by ENQUEUE and DELAY).
pub fn job_kind() -> Vec<u8> {
    JOB_KIND.0.lock().map(|k| k.clone()).unwrap_or_default()
}

impl ConfigurationValue<RedisString> for JobKind {
    fn get(&self, _: &ConfigurationContext) -> RedisString {
        let kind = self.0.lock().map(|k| k.clone()).unwrap_or_default();
        let kept = RedisString::create_from_slice(std::ptr::null_mut(), &kind);
        let handed = RedisString::from_redis_module_string(std::ptr::null_mut(), kept.inner);
        // Never freed while handed out: a poisoned lock leaks it instead.
        let address = kept.inner as usize;
        std::mem::forget(kept);
        if let Ok(mut last) = self.1.lock() {
            let previous = std::mem::replace(&mut *last, address);
            if previous != 0 {
                // The string handed out by the previous get, owned here.
                drop(RedisString::from_redis_module_string(
                    std::ptr::null_mut(),
                    previous as *mut _,
                ));
            }
        }
        handed
    }

    fn set(&self, _: &ConfigurationContext, value: RedisString) -> Result<(), RedisError> {
        let mut kind = self
            .0
            .lock()
            .map_err(|_| RedisError::Str("emq.job-kind is unavailable"))?;
        *kind = value.as_slice().to_vec();
        Ok(())
    }
}

/// The configs' names without `emq.` (registered under them in `lib.rs`;
/// `loadmodule` takes them so).
pub const MAX_CLAIM_NAME: &str = "max-claim";
pub const REAP_ON_CLAIM_NAME: &str = "reap-on-claim";
pub const JOB_KIND_NAME: &str = "job-kind";
pub const REPLICATE_NAME: &str = "replicate";
pub const STATS_WINDOW_NAME: &str = "stats-window";
pub const STATS_LANES_NAME: &str = "stats-lanes";
pub const MAX_PASSES_NAME: &str = "max-passes";
pub const NAMES: [&str; 7] = [
    MAX_CLAIM_NAME,
    REAP_ON_CLAIM_NAME,
    JOB_KIND_NAME,
    REPLICATE_NAME,
    STATS_WINDOW_NAME,
    STATS_LANES_NAME,
    MAX_PASSES_NAME,
];

/// `loadmodule`'s arguments after the path: config names each followed by
/// its value, and the test hook `debug-panic`. Whether the hook was given,
/// or why the arguments are refused: the crate reads the names it knows and
/// passes over the rest, so a misspelt or `emq.`-prefixed name would load
/// with its default, silently. The server refuses an unknown config; the
/// module refuses to load.
pub fn check_module_args(args: &[&[u8]]) -> Result<bool, String> {
    let mut debug_panic = false;
    let mut rest = args;
    while let Some((&arg, after)) = rest.split_first() {
        let text = String::from_utf8_lossy(arg);
        if arg == b"debug-panic" {
            debug_panic = true;
            rest = after;
        } else if NAMES.iter().any(|n| n.as_bytes() == arg) {
            let (_, after_value) = after
                .split_first()
                .ok_or_else(|| format!("loadmodule argument '{text}' has no value"))?;
            rest = after_value;
        } else {
            let bare = text.strip_prefix("emq.").unwrap_or(&text);
            let hint = if NAMES.contains(&bare) {
                format!(" (as a loadmodule argument its name is '{bare}')")
            } else {
                format!(" (the configs are {})", NAMES.join(", "))
            };
            return Err(format!("loadmodule argument '{text}' is no config of emq{hint}"));
        }
    }
    Ok(debug_panic)
}

#[cfg(test)]
mod tests {
    use super::check_module_args;

    #[test]
    fn loadmodule_takes_config_names_with_their_values_and_the_test_hook() {
        assert_eq!(check_module_args(&[]), Ok(false));
        assert_eq!(
            check_module_args(&[b"replicate", b"command", b"job-kind", b"TSK"]),
            Ok(false)
        );
        assert_eq!(check_module_args(&[b"max-claim", b"5", b"debug-panic"]), Ok(true));
        // A value that looks like a name or the hook is a value.
        assert_eq!(check_module_args(&[b"job-kind", b"debug-panic"]), Ok(false));
    }

    #[test]
    fn an_unknown_name_or_a_name_without_its_value_is_refused() {
        let err = check_module_args(&[b"emq.replicate", b"command"]).unwrap_err();
        assert!(
            err.contains("'emq.replicate' is no config") && err.contains("its name is 'replicate'"),
            "{err}"
        );
        let err = check_module_args(&[b"reap_on_claim", b"4"]).unwrap_err();
        assert!(err.contains("the configs are max-claim, reap-on-claim"), "{err}");
        let err = check_module_args(&[b"job-kind"]).unwrap_err();
        assert!(err.contains("'job-kind' has no value"), "{err}");
        assert!(
            check_module_args(&[b"Replicate", b"command"]).is_err(),
            "names are exact"
        );
    }
}
