//! The claim scenarios: each builds the same state under a native and a Lua
//! prefix and drives both alternately (native block, Lua block, …) so that
//! drift in the machine's speed hits both alike. A scenario with a core
//! floor also drives the core commands that do the same writes.

use std::time::Duration;

use super::drive::*;
use super::output::Row;
use super::support::replication::{digest, in_sync, replicate_into};
use super::support::Server;
use super::Bench;

/// Native/Lua block pairs per scenario.
pub const ROUNDS: usize = 8;
/// Claim calls per flavour in a one-job-per-turn scenario: blocks long
/// enough (tens of ms of server time each) that scheduling noise averages out.
pub const CALLS: usize = 48_000;
/// A lease no block outlives: nothing expires while a scenario runs.
const LEASE: &str = "600000";

/// `lanes` lanes, each with `depth` jobs (ids `JOB-<n>`, payloads of 32
/// bytes) and weight `weight`, all ringed; optionally each at a ceiling of
/// `limit`. Built natively for both sides: the keyspace is the same.
pub fn lanes(
    c: &mut super::support::Conn,
    p: &str,
    lanes: usize,
    depth: usize,
    weight: usize,
    limit: Option<usize>,
) {
    let mut cmds = Vec::new();
    let mut serial = 0usize;
    for i in 0..lanes {
        let lane = format!("l{i}");
        for chunk in (0..depth).collect::<Vec<_>>().chunks(500) {
            let mut enqueue = args(&["EMQ.ENQUEUE", p, &lane]);
            for _ in chunk {
                serial += 1;
                enqueue.push(format!("JOB-{serial}").into_bytes());
                enqueue.push(format!("{serial:032}").into_bytes());
            }
            cmds.push(enqueue);
        }
        if weight != 1 {
            cmds.push(args(&["EMQ.WEIGHT", p, &lane, &weight.to_string()]));
        }
        if let Some(l) = limit {
            cmds.push(args(&["EMQ.LIMIT", p, &lane, &l.to_string()]));
        }
    }
    send(c, &cmds);
}

type Setup<'a> = &'a dyn Fn(&mut super::support::Conn, &str);

impl Bench {
    /// One claim scenario: `setup` builds the same state under both
    /// prefixes; each block runs `calls / ROUNDS` claims of `verb`.
    pub fn claims(&mut self, name: &str, verb: &str, calls: usize, setup: Setup) -> Row {
        self.compare(name, verb, calls, setup, Side::Lua, setup)
    }

    /// Native claims on the state `setup` builds against `other`'s claims on
    /// the state `other_setup` builds (the "lua" columns of the row).
    pub fn compare(
        &mut self,
        name: &str,
        verb: &str,
        calls: usize,
        setup: Setup,
        other: Side,
        other_setup: Setup,
    ) -> Row {
        flush(&mut self.c);
        let (n, l, f) = ("bn{q}:", "bl{q}:", "bf{q}:");
        setup(&mut self.c, n);
        other_setup(&mut self.c, l);
        if c_floor(name) {
            setup(&mut self.c, f);
        }
        let native_cmd = Side::Native
            .calls(&mut self.c, &self.twins, verb, n, &[LEASE])
            .remove(0);
        let lua_cmd = other.calls(&mut self.c, &self.twins, verb, l, &[LEASE]).remove(0);
        let floor_cmd = Side::Floor
            .calls(&mut self.c, &self.twins, verb, f, &[LEASE])
            .remove(0);
        let (mut native, mut lua, mut floor) = (Tally::default(), Tally::default(), Tally::default());
        for _ in 0..ROUNDS {
            for (first, side, tally, cmd) in [
                (true, Side::Native, &mut native, &native_cmd),
                (false, other, &mut lua, &lua_cmd),
                (false, Side::Floor, &mut floor, &floor_cmd),
            ] {
                // Profiling: the first side alone (the other one alone with
                // `EMQ_BENCH_OTHER=1`); the C floor when it is loaded.
                let other_only = std::env::var("EMQ_BENCH_OTHER").is_ok_and(|v| v == "1");
                if side == Side::Floor && !c_floor(name)
                    || side != Side::Floor && native_only() && first == other_only
                {
                    continue;
                }
                let what = match (first, side) {
                    (false, Side::Native) => format!("native {}, other state", verb.to_uppercase()),
                    _ => side.what(verb),
                };
                reset_stats(&mut self.c);
                let (replies, elapsed) = self.probe.send(
                    &mut self.c,
                    (name, &what),
                    side.procs(),
                    &vec![cmd.clone(); calls / ROUNDS],
                    |r| Some(served(r)),
                );
                tally.add(
                    &commandstats(&mut self.c),
                    &side.stats(&[verb]),
                    served(&replies),
                    elapsed,
                );
            }
        }
        if c_floor(name) {
            assert_eq!(
                floor.jobs, native.jobs,
                "{name}: the C floor serves what the native does"
            );
            // Server time too, when the server runs without callgrind
            // (`PROFILE_TIME=1`): how close a target in µs can come to the
            // floor.
            if !self.probe.active() {
                println!(
                    "{name}: µs per job (INFO commandstats): native {:.2}, C floor {:.2}, {} {:.2}",
                    native.per_job(),
                    floor.per_job(),
                    other.what(verb),
                    lua.per_job()
                );
            }
        }
        let memory = Some((
            memory(&mut self.c, &format!("{n}*")),
            memory(&mut self.c, &format!("{l}*")),
        ));
        Row {
            name: name.to_string(),
            native,
            lua,
            floor_usec_per_job: None,
            memory_bytes: memory,
        }
    }

    /// The claim scenarios of one replication mode (`suffix` names it).
    pub fn claim_scenarios(&mut self, rows: &mut Vec<Row>, suffix: &str) {
        for k in [1usize, 8] {
            let name = format!("WCLAIM K={k}, 100 lanes{suffix}");
            if !selected(&name) {
                continue;
            }
            let calls = CALLS / k.min(4);
            let depth = calls * k / 100 + k;
            let mut row = self.claims(&name, "wclaim", calls, &|c, p| lanes(c, p, 100, depth, k, None));
            if floors() {
                row.floor_usec_per_job = Some(self.claim_floor(&name, k, calls / ROUNDS, depth));
            }
            rows.push(row);
        }
        let name = format!("CLAIM, 100 lanes{suffix}");
        if selected(&name) {
            let depth = CALLS / 100 + 1;
            rows.push(self.claims(&name, "claim", CALLS, &|c, p| lanes(c, p, 100, depth, 1, None)));
        }
        // Each turn takes a whole lane of 32: as many claims as lanes.
        let name = format!("BCLAIM of 32, 1,600 lanes{suffix}");
        if selected(&name) {
            rows.push(self.claims(&name, "bclaim", 1_600, &|c, p| lanes(c, p, 1_600, 32, 1, None)));
        }
        // As users hit a ceiling: every lane at ceiling 1 with two jobs, and
        // as many claims as lanes, so that the ring drains from 20,000 lanes
        // to none (every turn removes its lane).
        let name = format!("WCLAIM, 20,000 lanes at ceiling 1 draining to none{suffix}");
        if selected(&name) {
            rows.push(self.claims(&name, "wclaim", 20_000, &|c, p| {
                lanes(c, p, 20_000, 2, 1, Some(1))
            }));
        }
    }

    /// Claims that run once, in `effects` mode: without the expired-first
    /// step, with the AOF on, and at many lanes (a flat cost, the O(1)
    /// removal).
    pub fn once_scenarios(&mut self, rows: &mut Vec<Row>) {
        let depth = CALLS / 100 + 1;
        let name = "WCLAIM K=1, 100 lanes, emq.reap-on-claim 0";
        if selected(name) {
            set_config(&mut self.c, "emq.reap-on-claim", "0");
            rows.push(self.claims(name, "wclaim", CALLS, &|c, p| lanes(c, p, 100, depth, 1, None)));
            set_config(&mut self.c, "emq.reap-on-claim", "16");
        }
        let name = "WCLAIM K=1, 100 lanes, AOF on";
        if selected(name) {
            set_config(&mut self.c, "appendonly", "yes");
            std::thread::sleep(Duration::from_millis(500));
            rows.push(self.claims(name, "wclaim", CALLS, &|c, p| lanes(c, p, 100, depth, 1, None)));
            set_config(&mut self.c, "appendonly", "no");
        }
        // Fairness by time against EchoMQ's rule, both native (the count
        // side's figures in the row's "lua" columns): each turn reads the
        // lane's credit and cost, writes its credit and stamps its row. At
        // 100 lanes `P gcredit` is a listpack (each read and write a scan);
        // at 10,000 a hash table.
        for (count, label) in [(100usize, "100"), (10_000, "10,000")] {
            let name = format!("WCLAIM K=1, {label} lanes, fairness time, vs fairness count (both native)");
            if !selected(&name) {
                continue;
            }
            let depth = CALLS / count + 1;
            let timed = |c: &mut super::support::Conn, p: &str| {
                lanes(c, p, count, depth, 1, None);
                send(c, &[args(&["EMQ.POLICY", p, "fairness", "time"])]);
            };
            rows.push(
                self.compare(&name, "wclaim", CALLS, &timed, Side::Native, &|c, p| {
                    lanes(c, p, count, depth, 1, None)
                }),
            );
        }
        let name = "WCLAIM, 20,000 lanes at ceiling 1";
        if selected(name) {
            rows.push(self.claims(name, "wclaim", 8_000, &|c, p| lanes(c, p, 20_000, 2, 1, Some(1))));
        }
        // A rate costs what a ceiling does: every lane rated (never reached,
        // so that every turn serves and writes its arrival time) against
        // every lane at a ceiling (never reached), both native; the ceiling
        // side's figures are in the row's "lua" columns. At 100 lanes the
        // per-lane hashes are listpacks (each field read a scan); at 10,000
        // they are hash tables.
        for (count, label) in [(100usize, "100"), (10_000, "10,000")] {
            let name = format!("WCLAIM K=1, {label} lanes each rated, vs each at a ceiling (both native)");
            if !selected(&name) {
                continue;
            }
            let depth = CALLS / count + 1;
            let rated = |c: &mut super::support::Conn, p: &str| {
                lanes(c, p, count, depth, 1, None);
                let cmds = (0..count)
                    .map(|i| args(&["EMQ.RATE", p, &format!("l{i}"), "1000000", "1000"]))
                    .collect::<Vec<_>>();
                send(c, &cmds);
            };
            rows.push(
                self.compare(&name, "wclaim", CALLS, &rated, Side::Native, &|c, p| {
                    lanes(c, p, count, depth, 1, Some(1_000_000))
                }),
            );
        }
        let name = "WCLAIM K=1, 100,000 lanes";
        if selected(name) {
            rows.push(self.claims(name, "wclaim", CALLS, &|c, p| lanes(c, p, 100_000, 2, 1, None)));
        }
    }

    /// K=1 turns with a replica attached (with the module, so that both
    /// modes apply): the replication stream is built and sent. The replica
    /// must end with the primary's keyspace.
    pub fn with_replica(&mut self, name: &str) -> Row {
        let replica = Server::start();
        let mut r = replicate_into(&replica, &self.server);
        let depth = CALLS / 100 + 1;
        let row = self.claims(name, "wclaim", CALLS, &|c, p| lanes(c, p, 100, depth, 1, None));
        in_sync(&mut self.c, &mut r);
        assert_eq!(
            digest(&mut self.c),
            digest(&mut r),
            "{name}: the replica diverged"
        );
        r.ok(&["REPLICAOF", "NO", "ONE"]);
        row
    }

    /// The core floor of a `WCLAIM K=k, 100 lanes` turn, µs per job: the
    /// core commands that do the same writes on the same state (LMOVE;
    /// ZPOPMIN k; per job HINCRBY of `attempts`, HSET of `state`, HGET of the
    /// payload; ZADD of the k leases to `P active`; HINCRBY of `P gactive`),
    /// driven in the ring's own order.
    fn claim_floor(&mut self, name: &str, k: usize, calls: usize, depth: usize) -> f64 {
        flush(&mut self.c);
        let p = "f{q}:";
        lanes(&mut self.c, p, 100, depth, k, None);
        reset_stats(&mut self.c);
        let mut cmds = Vec::with_capacity(calls * (4 + 3 * k));
        for t in 0..calls {
            let (lane, visit) = (t % 100, t / 100);
            let first = lane * depth + visit * k + 1;
            cmds.extend(floor_turn(p, &format!("l{lane}"), first..first + k));
        }
        let procs = [
            "lmoveCommand",
            "zpopminCommand",
            "hincrbyCommand",
            "hsetCommand",
            "hgetCommand",
            "zaddCommand",
        ];
        // Per turn: its commands' instructions over the turns.
        self.probe
            .send(&mut self.c, (name, "core floor"), &procs, &cmds, |_| {
                Some(calls as u64 * k as u64)
            });
        let names = ["lmove", "zpopmin", "hincrby", "hset", "hget", "zadd"];
        let stats = commandstats(&mut self.c);
        let usec: u64 = names.iter().filter_map(|n| stats.get(*n)).map(|(_, u)| u).sum();
        usec as f64 / (calls * k) as f64
    }
}

/// A claim turn's writes as core commands.
pub fn floor_turn(p: &str, lane: &str, serials: std::ops::Range<usize>) -> Vec<Cmd> {
    let ring = format!("{p}ring");
    let mut out = vec![
        args(&["LMOVE", &ring, &ring, "LEFT", "RIGHT"]),
        args(&[
            "ZPOPMIN",
            &format!("{p}g:{lane}:pending"),
            &serials.len().to_string(),
        ]),
    ];
    let mut leases = args(&["ZADD", &format!("{p}active")]);
    for serial in serials.clone() {
        let row = format!("{p}job:JOB-{serial}");
        out.push(args(&["HINCRBY", &row, "attempts", "1"]));
        out.push(args(&["HSET", &row, "state", "active"]));
        out.push(args(&["HGET", &row, "payload"]));
        leases.extend([b"1796000000000".to_vec(), format!("JOB-{serial}").into_bytes()]);
    }
    out.push(leases);
    out.push(args(&[
        "HINCRBY",
        &format!("{p}gactive"),
        lane,
        &serials.len().to_string(),
    ]));
    out
}
