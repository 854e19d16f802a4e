//! The `emq` tool against a real server, as a person uses it: each
//! subcommand's output checked against the keyspace, the connection options
//! valkey-cli users expect, and `emq top` in a real terminal (tmux: started,
//! read with capture-pane, changed under it, stopped with Ctrl-C).

mod support;

use std::collections::BTreeMap;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use support::fixtures::{fill, hget, ring, served};
use support::{Conn, Server};

/// The tool, built by `make build` beside the module (a workspace member).
fn emq_path() -> String {
    support::server::built("emq").display().to_string()
}

fn emq(server: &Server, args: &[&str]) -> Output {
    let port = server.port.to_string();
    let mut all = vec!["-p", &port];
    all.extend(args);
    Command::new(emq_path()).args(&all).output().expect("run emq")
}

/// Sends `cmds` in one pipeline; every one must succeed.
fn pipe(c: &mut Conn, cmds: Vec<Vec<String>>) {
    let raw: Vec<Vec<Vec<u8>>> = cmds
        .iter()
        .map(|v| v.iter().map(|a| a.as_bytes().to_vec()).collect())
        .collect();
    for r in c.pipeline(&raw).unwrap() {
        r.expect("a pipelined command");
    }
}

fn stdout_ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "emq failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// A queue with lanes in every state: deep, weighted, at a ceiling, paused,
/// with leases.
fn populate(c: &mut Conn, p: &str) {
    for (lane, depth) in [("deep", 40), ("mid", 12), ("capped", 6), ("held", 5), ("w3", 9)] {
        fill(c, p, lane, depth);
    }
    c.ok(&["EMQ.WEIGHT", p, "w3", "3"]);
    c.ok(&["EMQ.LIMIT", p, "capped", "1"]);
    c.ok(&["EMQ.PAUSE", p, "held"]);
    for _ in 0..4 {
        assert!(!served(&c.ok(&["EMQ.WCLAIM", p, "600000"])).is_empty(), "a claim");
    }
}

/// A table row of a lane with no rate: depth, active/limit, weight, rate,
/// paused, ringed, jobs%, weight%, busy%, wait p99, oldest wait, by lane.
fn table(text: &str) -> BTreeMap<String, Vec<String>> {
    text.lines()
        .skip_while(|l| !l.trim_start().starts_with("DEPTH"))
        .skip(1)
        .map(|l| l.split_whitespace().map(str::to_string).collect::<Vec<_>>())
        .filter(|cols| {
            cols.len() == 12 && (cols[0].replace(',', "").parse::<u64>().is_ok() || cols[0] == "WRONGTYPE")
        })
        .map(|cols| (cols[11].clone(), cols[..11].to_vec()))
        .collect()
}

/// Each row agrees with the keyspace, read with core commands.
fn rows_match_keyspace(c: &mut Conn, p: &str, rows: &BTreeMap<String, Vec<String>>) {
    let ring = ring(c, p);
    for (lane, cols) in rows {
        let depth = c.int(&["ZCARD", &format!("{p}g:{lane}:pending")]);
        assert_eq!(cols[0].replace(',', ""), depth.to_string(), "{lane} depth");
        let hget = |c: &mut Conn, h: &str| hget(c, &format!("{p}{h}"), lane);
        let active = hget(c, "gactive").unwrap_or("0".into());
        let limit = hget(c, "glimit").unwrap_or("-".into());
        assert_eq!(cols[1], format!("{active}/{limit}"), "{lane} active/limit");
        assert_eq!(cols[2], hget(c, "gweight").unwrap_or("1".into()), "{lane} weight");
        assert_eq!(
            hget(c, "grate"),
            None,
            "{lane}: rows with a rate are not parsed here"
        );
        assert_eq!(cols[3], "-", "{lane} rate");
        let paused = c.int(&["SISMEMBER", &format!("{p}paused"), lane]) == 1;
        assert_eq!(cols[4], if paused { "yes" } else { "no" }, "{lane} paused");
        let ringed = ring.iter().any(|l| l == lane);
        assert_eq!(cols[5], if ringed { "yes" } else { "no" }, "{lane} ringed");
    }
}

/// Each row's share of jobs and share of weight agree with EMQ.STATS, and
/// it shows a wait p99 exactly when EMQ.STATS has one.
fn figures_match_stats(c: &mut Conn, p: &str, rows: &BTreeMap<String, Vec<String>>) {
    for (lane, cols) in rows {
        let s = c.ok(&["EMQ.STATS", p, "LANE", lane]);
        let share = |name: &str| -> String {
            let v: f64 = s.field(name).unwrap().text().parse().unwrap();
            format!("{:.1}%", v * 100.0)
        };
        assert_eq!(cols[6], share("share"), "{lane} jobs%");
        assert_eq!(cols[7], share("weight_share"), "{lane} weight%");
        assert_eq!(cols[8], share("busy_share"), "{lane} busy%");
        let p99 = s.field("wait_p99_ms").unwrap();
        assert_eq!(
            cols[9] == "-",
            *p99 == support::Value::Nil,
            "{lane} p99 {}",
            cols[9]
        );
    }
}

#[test]
fn lanes_shows_every_lane_as_the_keyspace_holds_it_deepest_first() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "q{o}:";
    populate(&mut c, p);
    let out = stdout_ok(&emq(&server, &["lanes", p]));
    let rows = table(&out);
    assert_eq!(rows.len(), 5, "{out}");
    rows_match_keyspace(&mut c, p, &rows);
    figures_match_stats(&mut c, p, &rows);
    assert_ne!(rows["w3"][6], "0.0%", "w3 was served: {out}");
    let order: Vec<&str> = out
        .lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().last())
        .collect();
    assert_eq!(order[0], "deep", "deepest first:\n{out}");
    // An empty queue: just the header.
    let out = stdout_ok(&emq(&server, &["lanes", "none{o}:"]));
    assert_eq!(out.lines().count(), 1, "{out}");
}

#[test]
fn lanes_shows_damage_as_it_is_and_names_cannot_drive_the_terminal() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "q{o}:";
    populate(&mut c, p);
    // One lane's pending key of another type, and a lane whose name holds
    // an escape sequence: every row still shows, the name inert.
    c.ok(&["SET", &format!("{p}g:broken:pending"), "x"]);
    c.ok(&["EMQ.ENQUEUE", p, "evil\x1b[2J", "JOB-evil", "x"]);
    let out = stdout_ok(&emq(&server, &["lanes", p]));
    assert!(
        !out.contains('\x1b'),
        "a raw escape reached the terminal: {out:?}"
    );
    let rows = table(&out);
    assert_eq!(rows.len(), 7, "{out}");
    assert_eq!(rows["broken"][0], "WRONGTYPE", "{out}");
    assert_eq!(rows["evil\\x1b[2J"][0], "1", "{out}");
    let first = out.lines().nth(1).unwrap();
    assert!(first.ends_with("broken"), "unreadable lanes first:\n{out}");
    // The totals still read (EMQ.QUEUE does not read pending keys).
    stdout_ok(&emq(&server, &["top", "--once", p]));
}

#[test]
fn top_once_prints_the_totals_emq_queue_reports() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "q{o}:";
    populate(&mut c, p);
    let out = stdout_ok(&emq(&server, &["top", "--once", p]));
    let leased = c.int(&["ZCARD", &format!("{p}active")]);
    let ringed = c.int(&["LLEN", &format!("{p}ring")]);
    let totals = out
        .lines()
        .find(|l| l.starts_with("lanes "))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(
        totals.starts_with(&format!(
            "lanes 5   ringed {ringed}   paused 1   throttled 0   leased {leased}   expired 0   dead 0"
        )),
        "{totals}"
    );
    assert!(!out.contains('\x1b'), "no escape codes when not on a terminal");
    rows_match_keyspace(&mut c, p, &table(&out));
    figures_match_stats(&mut c, p, &table(&out));
    let window = out
        .lines()
        .find(|l| l.starts_with("window: "))
        .unwrap_or_else(|| panic!("{out}"));
    let jobs = c.ok(&["EMQ.STATS", p]).field("jobs").unwrap().int();
    assert!(window.starts_with(&format!("window: {jobs} jobs   ")), "{window}");
}

#[test]
fn repair_mends_a_deleted_ring_and_a_dry_run_changes_nothing() {
    let server = Server::start();
    let mut c = server.conn();
    let _ = pipe;
    let p = "q{o}:";
    populate(&mut c, p);
    let before = ring(&mut c, p);
    c.ok(&["DEL", &format!("{p}ring")]);
    c.ok(&["HSET", &format!("{p}gactive"), "mid", "9"]);

    let out = stdout_ok(&emq(&server, &["repair", "--dry-run", p]));
    assert!(out.contains("mid: ringed 0 -> 1, active 9 -> 1"), "{out}");
    assert!(out.ends_with("5 lanes checked, would repair 3\n"), "{out}");
    assert!(ring(&mut c, p).is_empty(), "the dry run wrote");

    let out = stdout_ok(&emq(&server, &["repair", p]));
    assert!(out.ends_with("5 lanes checked, repaired 3\n"), "{out}");
    let mut after = ring(&mut c, p);
    let mut want = before.clone();
    after.sort();
    want.sort();
    assert_eq!(after, want, "the ring holds the serviceable lanes again");
    let out = stdout_ok(&emq(&server, &["repair", p]));
    assert!(out.ends_with("5 lanes checked, repaired 0\n"), "{out}");

    // A count of "0" stored (the field should be gone): named as it goes.
    c.ok(&["HSET", &format!("{p}gactive"), "held", "0"]);
    let out = stdout_ok(&emq(&server, &["repair", p]));
    assert!(out.contains("held: active 0 -> none\n"), "{out}");
    assert!(out.ends_with("5 lanes checked, repaired 1\n"), "{out}");

    // A ceiling that is no number: named, the rest still repaired.
    c.ok(&["HSET", &format!("{p}glimit"), "capped", "lots"]);
    c.ok(&["DEL", &format!("{p}ring")]);
    let out = stdout_ok(&emq(&server, &["repair", p]));
    assert!(
        out.contains(
            "capped: damaged, left as it is: ERR limit of lane 'capped' in 'q{o}:glimit' is not an integer"
        ),
        "{out}"
    );
    assert!(out.ends_with("5 lanes checked, repaired 3, 1 damaged beyond repair (set their ceiling with EMQ.LIMIT or their rate with EMQ.RATE, or remove the stray key)\n"), "{out}");
    assert_eq!(ring(&mut c, p).len(), 3);
}

/// A throttled lane whose wait in `P gnext` was lost: `emq repair` says it
/// restores the wait and leaves the lane out of the ring.
#[test]
fn repair_restores_a_throttled_lanes_lost_wait() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "q{r}:";
    c.ok(&["EMQ.ENQUEUE", p, "a", "JOB-1", "x", "JOB-2", "y"]);
    c.ok(&["EMQ.RATE", p, "a", "1", "600000", "BURST", "1"]);
    assert_eq!(served(&c.ok(&["EMQ.CLAIM", p, "60000"])).len(), 1);
    let next = format!("{p}gnext");
    let at = c.ok(&["ZSCORE", &next, "a"]).text();
    c.ok(&["DEL", &next]);
    let out = stdout_ok(&emq(&server, &["repair", p]));
    assert!(out.contains(&format!("a: waits none -> {at}")), "{out}");
    assert!(out.ends_with("1 lanes checked, repaired 1\n"), "{out}");
    assert_eq!(c.ok(&["ZSCORE", &next, "a"]).text(), at);
    assert!(ring(&mut c, p).is_empty(), "not rung while throttled");
}

/// A paused lane's time in `P gnext` is either its pause's end or, after
/// EchoMQ's own `@gpause` met it throttled, its rate's wait: `emq lanes`
/// shows the first as "for", the second as the rate's wait of a lane paused
/// with no end (as EMQ.LANE's `paused_until` says).
#[test]
fn lanes_tells_a_rates_wait_from_a_pauses_end() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "q{w}:";
    for lane in ["held", "timed"] {
        c.ok(&[
            "EMQ.ENQUEUE",
            p,
            lane,
            &format!("JOB-{lane}-1"),
            "x",
            &format!("JOB-{lane}-2"),
            "y",
        ]);
        c.ok(&["EMQ.RATE", p, lane, "1", "600000", "BURST", "1"]);
    }
    for _ in 0..2 {
        assert_eq!(served(&c.ok(&["EMQ.CLAIM", p, "60000"])).len(), 1);
    }
    let twins = support::twins::Twins::load(&mut c);
    twins
        .like_native(&mut c, "pause", &[p.as_bytes(), b"held"])
        .unwrap();
    c.ok(&["EMQ.PAUSE", p, "timed", "FOR", "3600000"]);
    let lane = c.ok(&["EMQ.LANE", p, "held"]);
    assert_eq!(lane.field("paused_until"), Some(&support::Value::Nil), "{lane:?}");
    let out = stdout_ok(&emq(&server, &["lanes", p]));
    let row = |name: &str| {
        out.lines()
            .find(|l| l.split_whitespace().last() == Some(name))
            .unwrap_or_else(|| panic!("no row {name}:\n{out}"))
            .to_string()
    };
    let held = row("held");
    assert!(
        held.contains(" wait 9m5") && held.contains(" yes ") && !held.contains("for "),
        "{out}"
    );
    let timed = row("timed");
    assert!(timed.contains("for 1h0") || timed.contains("for 59m"), "{out}");
    assert!(!timed.contains(" wait "), "{out}");
}

#[test]
fn dead_lists_and_revive_brings_back() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "q{o}:";
    c.ok(&["EMQ.ENQUEUE", p, "lane-a", "JOB-1", "x", "JOB-2", "y"]);
    let j = served(&c.ok(&["EMQ.CLAIM", p, "60000"]))[0].clone();
    c.ok(&["EMQ.RETRY", p, &j.0, "1", "0", "1", "it\x1b[2Jbroke"]);
    let out = stdout_ok(&emq(&server, &["dead", p]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(!out.contains('\x1b'), "{out:?}");
    let cols: Vec<&str> = lines[1].split_whitespace().collect();
    assert_eq!(cols, ["JOB-1", "lane-a", "it\\x1b[2Jbroke"], "{out}");
    let out = stdout_ok(&emq(&server, &["revive", p, "JOB-1", "nobody"]));
    assert_eq!(out, "revived 1 of 2 jobs\n");
    assert_eq!(c.int(&["ZCARD", &format!("{p}g:lane-a:pending")]), 2);
    assert_eq!(stdout_ok(&emq(&server, &["dead", p])).lines().count(), 1);
}

#[test]
fn it_connects_as_valkey_cli_does_and_fails_plainly() {
    let server = Server::start();
    let mut c = server.conn();
    c.ok(&["ACL", "SETUSER", "op", "on", ">s3cret", "~*", "+@all"]);
    c.ok(&["SELECT", "3"]);
    c.ok(&["EMQ.ENQUEUE", "q:", "in-db-3", "JOB1", "x"]);
    let port = server.port.to_string();
    let uri = format!("redis://op:s3cret@127.0.0.1:{port}/3");
    for args in [
        vec![
            "-p", &port, "--user", "op", "-a", "s3cret", "-n", "3", "lanes", "q:",
        ],
        vec!["-u", &uri, "lanes", "q:"],
        vec!["lanes", "q:", "-h", "127.0.0.1", "-p", &port, "--db", "3"],
    ] {
        let out = Command::new(emq_path()).args(&args).output().unwrap();
        assert!(stdout_ok(&out).contains("in-db-3"), "{args:?}");
    }
    // Database 0 holds no such lane.
    let out = Command::new(emq_path())
        .args(["-p", &port, "lanes", "q:"])
        .output()
        .unwrap();
    assert!(!stdout_ok(&out).contains("in-db-3"));

    for (args, want) in [
        (
            vec!["-p", &port, "--user", "op", "-a", "wrong", "lanes", "q:"],
            "Password authentication failed",
        ),
        (vec!["-p", "1", "lanes", "q:"], "cannot connect to 127.0.0.1:1"),
        (
            vec!["-p", &port, "lanes", ""],
            "emq: ERR the prefix must not be empty",
        ),
        (vec!["-p", &port, "top", "q:", "-i", "0"], "interval"),
        (vec!["-p", &port, "revive", "q:"], "<JOBS>"),
        (vec!["-p", &port, "frobnicate"], "unrecognized subcommand"),
    ] {
        let out = Command::new(emq_path()).args(&args).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("panicked"), "{args:?}: {err}");
    }
}

/// A tmux server of its own, killed when the test ends.
struct Tmux {
    socket: String,
}

impl Tmux {
    fn new() -> Tmux {
        let found = Command::new("tmux").arg("-V").output();
        assert!(
            found.is_ok_and(|o| o.status.success()),
            "tmux is missing: `make test` installs it (scripts/deps.sh tmux)"
        );
        // One tmux server per test: tests run side by side.
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Tmux {
            socket: format!("emq-test-{}-{n}", std::process::id()),
        }
    }

    fn run(&self, args: &[&str]) -> String {
        let out = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "tmux {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn screen(&self) -> String {
        self.run(&["capture-pane", "-p", "-t", "top"])
    }

    /// Waits until the screen satisfies `ok`; returns it.
    fn wait(&self, what: &str, mut ok: impl FnMut(&str) -> bool) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let s = self.screen();
            if ok(&s) {
                return s;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}; the screen:\n{s}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Tmux {
    fn drop(&mut self) {
        let _ = Command::new("tmux")
            .arg("-L")
            .arg(&self.socket)
            .arg("kill-server")
            .output();
    }
}

#[test]
fn top_runs_in_a_real_terminal_and_follows_the_queue() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "q{o}:";
    populate(&mut c, p);
    let tmux = Tmux::new();
    // A shell in a 100 × 16 terminal; emq typed into it, as a person would.
    tmux.run(&["new-session", "-d", "-s", "top", "-x", "100", "-y", "16", "sh"]);
    // Keys may arrive before the shell's prompt (then its output follows the
    // prompt on one line): wait for output the typed line does not contain.
    tmux.run(&["send-keys", "-t", "top", "echo before-top-$((40+2))", "Enter"]);
    tmux.wait("the shell", |s| s.contains("before-top-42"));
    let line = format!("{} -p {} top -i 0.2 '{p}'", emq_path(), server.port);
    tmux.run(&["send-keys", "-t", "top", &line, "Enter"]);
    let screen = tmux.wait("the first frame", |s| s.contains("DEPTH") && s.contains("deep"));
    assert!(screen.starts_with(&format!("emq top {p}")), "{screen}");
    rows_match_keyspace(&mut c, p, &table(&screen));

    // The queue changes under it: a new deep lane, claims served.
    fill(&mut c, p, "burst", 300);
    let screen = tmux.wait("the new lane on top", |s| {
        table(s).get("burst").is_some_and(|r| r[0] == "300")
    });
    let first_row = screen
        .lines()
        .skip_while(|l| !l.contains("DEPTH"))
        .nth(1)
        .unwrap();
    assert!(first_row.ends_with("burst"), "deepest first:\n{screen}");
    let stop = Instant::now() + Duration::from_secs(20);
    let screen = loop {
        // Claims keep coming until a frame has seen them.
        c.ok(&["EMQ.WCLAIM", p, "600000"]);
        let s = tmux.screen();
        let rate = s
            .lines()
            .find_map(|l| l.strip_prefix("server: "))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.replace(',', "").parse::<u64>().ok());
        if rate.is_some_and(|r| r > 0) {
            break s;
        }
        assert!(Instant::now() < stop, "no jobs/s shown:\n{s}");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(screen.contains("jobs/s claimed"), "{screen}");
    // The frame fits the terminal and says how many lanes it left out.
    assert!(screen.lines().count() <= 16, "{screen}");
    assert!(
        screen.contains("… 1 more lanes") || table(&screen).len() == 6,
        "{screen}"
    );
    // A frame drawn after the last claim: its leased total agrees.
    let leased = c.int(&["ZCARD", &format!("{p}active")]);
    let rows = tmux.wait("a frame after the claims", |s| {
        s.contains(&format!("leased {leased} ")) && !table(s).is_empty()
    });
    rows_match_keyspace(&mut c, p, &table(&rows));
    figures_match_stats(&mut c, p, &table(&rows));
    assert!(rows.contains("JOBS%") && rows.contains("window: "), "{rows}");

    // Ctrl-C: emq ends and the shell's screen comes back.
    tmux.run(&["send-keys", "-t", "top", "C-c"]);
    let screen = tmux.wait("the shell again", |s| {
        s.contains("before-top") && !s.contains("DEPTH")
    });
    assert!(
        screen.contains("top -i 0.2"),
        "the typed command is on the restored screen:\n{screen}"
    );
    tmux.run(&["send-keys", "-t", "top", "echo exit=$?", "Enter"]);
    tmux.wait("emq's exit status", |s| s.lines().any(|l| l.ends_with("exit=0")));
}

/// `emq top` shows a lane throttled by its rate (how long it waits) and one
/// paused for a while (how long is left), counts them in its totals, and
/// follows both as they come back by themselves.
#[test]
fn top_shows_throttled_and_timed_paused_lanes_until_they_come_back() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "rt{o}:";
    // Two jobs: its burst takes both, so no claim throttles it again.
    fill(&mut c, p, "rated", 2);
    fill(&mut c, p, "parked", 50);
    fill(&mut c, p, "plain", 50);
    c.ok(&["EMQ.RATE", p, "rated", "2", "4000"]);
    c.ok(&["EMQ.PAUSE", p, "parked", "FOR", "3000"]);
    // Its burst of 2, then throttled for 2 s.
    for _ in 0..3 {
        c.ok(&["EMQ.WCLAIM", p, "600000"]);
    }
    assert_eq!(
        c.ok(&["EMQ.LANE", p, "rated"]).field("throttled"),
        Some(&support::Value::Int(1))
    );
    let tmux = Tmux::new();
    tmux.run(&["new-session", "-d", "-s", "top", "-x", "110", "-y", "16", "sh"]);
    tmux.run(&["send-keys", "-t", "top", "echo before-top-$((40+2))", "Enter"]);
    tmux.wait("the shell", |s| s.contains("before-top-42"));
    let line = format!("{} -p {} top -i 0.2 '{p}'", emq_path(), server.port);
    tmux.run(&["send-keys", "-t", "top", &line, "Enter"]);
    let row = |s: &str, lane: &str| {
        s.lines()
            .find(|l| l.ends_with(&format!(" {lane}")))
            .unwrap_or_default()
            .to_string()
    };
    let screen = tmux.wait("both lanes waiting", |s| {
        row(s, "rated").contains("2/4.0s wait") && row(s, "parked").contains("for ")
    });
    assert!(screen.contains("paused 1   throttled 1 "), "{screen}");
    assert!(screen.contains("next return in "), "{screen}");
    let rated: Vec<String> = row(&screen, "rated")
        .split_whitespace()
        .map(String::from)
        .collect();
    assert_eq!(rated[rated.len() - 7], "no", "out of the ring:\n{screen}");
    // Both come back by themselves: a polling claim rings them.
    let screen = tmux.wait("both lanes back", |s| {
        c.ok(&["EMQ.QUEUE", p]);
        let _ = c.cmd(&["EMQ.CLAIM", p, "600000"]);
        !row(s, "rated").contains("wait") && !row(s, "parked").contains("for ") && s.contains("throttled 0 ")
    });
    assert!(
        row(&screen, "parked").contains(" no "),
        "resumed:
{screen}"
    );
    tmux.run(&["send-keys", "-t", "top", "C-c"]);
    tmux.wait("the shell again", |s| {
        s.contains("before-top") && !s.contains("DEPTH")
    });
}

/// `emq top` over a queue of more lanes than one page of `EMQ.LANES` (1,000):
/// it reads every lane — the deepest, made last, is on top and the total
/// counts them all — and the jobs/s it shows follows a steady claim rate.
#[test]
fn top_reads_every_page_of_a_large_queue_and_shows_the_claim_rate() {
    let server = Server::start();
    let mut c = server.conn();
    let p = "big{o}:";
    pipe(
        &mut c,
        (0..2_500)
            .map(|i| {
                vec![
                    "EMQ.ENQUEUE".into(),
                    p.into(),
                    format!("lane{i:04}"),
                    format!("JOB{i}"),
                    "x".into(),
                ]
            })
            .collect(),
    );
    fill(&mut c, p, "zz-deepest", 5_000);

    let tmux = Tmux::new();
    tmux.run(&["new-session", "-d", "-s", "big", "-x", "100", "-y", "12", "sh"]);
    tmux.run(&["send-keys", "-t", "big", "echo before-top-$((40+2))", "Enter"]);
    tmux.wait("the shell", |s| s.contains("before-top-42"));
    let line = format!("{} -p {} top -i 0.5 '{p}'", emq_path(), server.port);
    tmux.run(&["send-keys", "-t", "big", &line, "Enter"]);
    let screen = tmux.wait("the first frame", |s| s.contains("DEPTH"));
    assert!(screen.contains("lanes 2,501 "), "every lane counted:\n{screen}");
    let first_row = screen
        .lines()
        .skip_while(|l| !l.contains("DEPTH"))
        .nth(1)
        .unwrap();
    assert!(first_row.ends_with("zz-deepest"), "the deepest first:\n{screen}");

    // Claims at a steady ~100 a second, from another connection.
    let port = server.port;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flag = stop.clone();
    let claimer = std::thread::spawn(move || {
        let mut w = Conn::open(port).unwrap();
        while !flag.load(std::sync::atomic::Ordering::Relaxed) {
            w.ok(&["EMQ.CLAIM", p, "600000"]);
            std::thread::sleep(Duration::from_millis(10));
        }
    });
    let rate = |s: &str| {
        s.lines()
            .find_map(|l| l.strip_prefix("server: "))
            .and_then(|l| l.split_whitespace().next())
            .and_then(|n| n.replace(',', "").parse::<u64>().ok())
    };
    // Two frames into the claims: the rate of a whole interval of them.
    std::thread::sleep(Duration::from_millis(1_500));
    let shown = rate(&tmux.screen());
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    claimer.join().unwrap();
    let shown = shown.expect("a rate is shown");
    assert!(
        (20..=400).contains(&shown),
        "{shown} jobs/s shown for about 100 claimed a second"
    );
    tmux.run(&["send-keys", "-t", "big", "C-c"]);
    tmux.wait("the shell again", |s| !s.contains("DEPTH"));
}
