//! Bakes the build's identity into the binary so `MODULE LIST` (the version
//! number) and `INFO emq` (version and commit) tell which build is loaded.
use std::process::Command;

fn main() {
    let commit = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "unknown".to_string());
    let dirty = Command::new("git")
        .args(["status", "--porcelain", "--untracked-files=no"])
        .output()
        .ok()
        .is_some_and(|o| o.status.success() && !o.stdout.is_empty());
    let commit = if dirty { format!("{commit}-dirty") } else { commit };
    println!("cargo:rustc-env=EMQ_GIT_COMMIT={commit}");

    // MODULE LIST shows one integer: major * 10000 + minor * 100 + patch.
    let part = |name: &str| -> u32 { std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(0) };
    let number = part("CARGO_PKG_VERSION_MAJOR") * 10000
        + part("CARGO_PKG_VERSION_MINOR") * 100
        + part("CARGO_PKG_VERSION_PATCH");
    println!("cargo:rustc-env=EMQ_VERSION_NUMBER={number}");
    println!("cargo:rerun-if-changed=.git/HEAD");
    println!("cargo:rerun-if-changed=.git/index");
}
