//! Differential test: on random seeded states — damaged ones among them
//! (a lane's bad numbers, duplicate ids, leased and dead ids pending, paused
//! and nameless lanes in the ring, a pending key of the wrong type) — every
//! native call and its Lua twin give the same reply and leave the same
//! keyspace, every key compared exactly. The two calls run in one MULTI/EXEC, so they read the same
//! server clock and their lease deadlines must be equal. A failure prints the
//! seed and the turn to replay.

mod common;

use std::cell::Cell;

use common::rng::Rng;
use common::*;

/// Claim turns per test function; two functions run in parallel.
const TURNS_PER_SEED: usize = 100;
const SEEDS_PER_TEST: u64 = 55;

fn random_lane(rng: &mut Rng, name: String) -> LaneSpec {
    let depth = rng.below(7) as usize;
    let jobs = (0..depth)
        .map(|i| {
            let mint = match rng.below(10) {
                0 => format!("{}.5", rng.range(-3, 3)),
                1 => "1e17".to_string(),
                2 => "-inf".to_string(),
                _ => rng.range(0, 5).to_string(), // ties, broken by member
            };
            (mint, format!("{name}-{i}"))
        })
        .collect();
    let limit = rng.chance(1, 2).then(|| rng.range(1, 5));
    let active = match (limit, rng.below(3)) {
        (_, 0) => None,
        (Some(l), _) => Some(rng.range(0, l + 1)),
        (None, _) => Some(rng.range(0, 3)),
    };
    let mut spec = LaneSpec {
        name,
        jobs,
        weight: (!rng.chance(1, 4)).then(|| rng.range(-1, 6).to_string()),
        limit: limit.map(|l| l.to_string()),
        active: active.map(|a| a.to_string()),
    };
    // One lane in eight carries damage of its own: a claim skips it.
    if rng.chance(1, 8) {
        let bad = ["2.5", "abc", "1e3", " 5", "+1", ""];
        let value = bad[rng.below(bad.len() as u64) as usize].to_string();
        match rng.below(4) {
            0 => spec.weight = Some(value),
            1 => spec.limit = Some(value),
            2 => spec.active = Some(value),
            _ => spec.active = Some(format!("-{}", rng.range(1, 4))),
        }
    }
    // A ceiling of 0 or below leaves no headroom: dropped, not skipped.
    if rng.chance(1, 16) {
        spec.limit = Some(rng.range(-2, 1).to_string());
    }
    spec
}

/// Whether a built lane may be ringed: it is serviceable, or its numbers are
/// damaged (a claim skips it, and it never joins the ring again).
fn ringable(l: &LaneSpec) -> bool {
    let parse = |v: &Option<String>| v.as_ref().map(|s| s.parse::<i64>().ok());
    match (parse(&l.active), parse(&l.limit)) {
        (Some(None), _) | (_, Some(None)) => true,
        (active, limit) => {
            let active = active.flatten().unwrap_or(0);
            !l.jobs.is_empty() && limit.flatten().is_none_or(|lim| active < lim)
        }
    }
}

/// Whether a lane is serviceable now, read with core commands.
fn serviceable_now(c: &mut redis::Connection, p: &str, lane: &str) -> bool {
    let depth: i64 = redis::cmd("ZCARD")
        .arg(format!("{p}g:{lane}:pending"))
        .query(c)
        .unwrap();
    let active = hget(c, &format!("{p}gactive"), lane);
    let limit = hget(c, &format!("{p}glimit"), lane);
    let paused: bool = redis::cmd("SISMEMBER")
        .arg(format!("{p}gpaused"))
        .arg(lane)
        .query(c)
        .unwrap();
    let active = active.map_or(Some(0), |a| a.parse::<i64>().ok());
    let limit = limit.map(|l| l.parse::<i64>().ok());
    match (active, limit) {
        (Some(a), None) => depth > 0 && !paused && a >= 0,
        (Some(a), Some(Some(l))) => depth > 0 && !paused && a < l,
        _ => false,
    }
}

/// Damage that is not a lane's own numbers, made with core commands on both
/// prefixes alike: job ids pending in two lanes, pending ids already leased
/// or dead, a paused lane in the ring, a nameless lane, a pending key of the
/// wrong type.
fn damage(c: &mut redis::Connection, rng: &mut Rng, prefixes: [&str; 2], lanes: &[LaneSpec]) {
    let jobs: Vec<&str> = lanes
        .iter()
        .flat_map(|l| l.jobs.iter().map(|(_, j)| j.as_str()))
        .collect();
    let mut pipe = redis::pipe();
    for _ in 0..rng.range(1, 8) {
        let Some(job) = jobs.get(rng.below(jobs.len().max(1) as u64) as usize) else {
            break;
        };
        let lane = &lanes[rng.below(lanes.len() as u64) as usize].name;
        let roll = rng.below(4);
        for p in prefixes {
            match roll {
                0 => pipe
                    .cmd("ZADD")
                    .arg(format!("{p}g:{lane}:pending"))
                    .arg(-1)
                    .arg(job),
                1 => pipe
                    .cmd("HSET")
                    .arg(format!("{p}jlease"))
                    .arg(job)
                    .arg(format!("0 {lane}")),
                2 => pipe
                    .cmd("HSET")
                    .arg(format!("{p}jdead"))
                    .arg(job)
                    .arg(format!("0 {lane}")),
                _ => pipe.cmd("SADD").arg(format!("{p}gpaused")).arg(lane),
            };
            pipe.ignore();
        }
    }
    let extra = rng.below(8);
    // An expired lease of some lane (whose numbers may be damaged: its jobs
    // still go back), or one whose record's mint is damaged.
    let expired_lane = &lanes[rng.below(lanes.len() as u64) as usize].name;
    for p in prefixes {
        match extra {
            2 | 3 => {
                let (job, mint) = if extra == 2 {
                    ("expired1", "7")
                } else {
                    ("expired2", "1e999")
                };
                pipe.cmd("ZADD")
                    .arg(format!("{p}leases"))
                    .arg(1)
                    .arg(job)
                    .ignore();
                pipe.cmd("HSET")
                    .arg(format!("{p}jlease"))
                    .arg(job)
                    .arg(format!("{mint} {expired_lane}"))
                    .ignore();
            }
            0 => {
                pipe.cmd("RPUSH").arg(format!("{p}gring")).arg("").ignore();
                pipe.cmd("ZADD")
                    .arg(format!("{p}g::pending"))
                    .arg(1)
                    .arg("nameless")
                    .ignore();
            }
            1 => {
                pipe.cmd("SET")
                    .arg(format!("{p}g:typo:pending"))
                    .arg("x")
                    .ignore();
                pipe.cmd("RPUSH").arg(format!("{p}gring")).arg("typo").ignore();
            }
            _ => {}
        }
    }
    if pipe.cmd_iter().next().is_some() {
        pipe.query::<()>(c).expect("damage");
    }
}

fn lane_name(rng: &mut Rng, i: usize) -> String {
    match rng.below(8) {
        0 => format!("pl {i}"),
        1 => format!("{{t{i}}}"),
        2 => format!("ü{i}"),
        _ => format!("L{i}"),
    }
}

fn run_seed(c: &mut redis::Connection, twins: &Twins, tol: i64, seed: u64) -> usize {
    let mut rng = Rng::new(seed);
    // Expired leases first, with the bound as the twins' argument.
    twins.set_reap_on_claim(c, [0, 1, 3, 16][rng.below(4) as usize]);
    let n = format!("n{seed}{{q}}:");
    let l = format!("l{seed}{{q}}:");
    let names: Vec<String> = (0..rng.range(1, 8) as usize)
        .map(|i| lane_name(&mut rng, i))
        .collect();
    let lanes: Vec<LaneSpec> = names
        .iter()
        .map(|name| random_lane(&mut rng, name.clone()))
        .collect();
    // The ring holds each lane at most once, and an unserviceable lane only
    // when it can never join again (its numbers are damaged): a lane ringed
    // twice is the one state where native and twin differ (a drop removes
    // one copy natively, in O(1), and every copy in the seed's LREM).
    let mut ring: Vec<&str> = lanes
        .iter()
        .filter(|l| ringable(l) && rng.chance(4, 5))
        .map(|l| l.name.as_str())
        .collect();
    if rng.chance(1, 5) {
        ring.push("never-made");
    }
    rng.shuffle(&mut ring);
    for p in [&n, &l] {
        build(c, p, &lanes, &ring);
    }
    if rng.chance(2, 3) {
        damage(c, &mut rng, [&n, &l], &lanes);
    }

    let mut claims = 0;
    let mut step = 0;
    let mut claimed: Vec<String> = Vec::new();
    while claims < TURNS_PER_SEED {
        step += 1;
        let roll = rng.below(20);
        // A third of the leases run out within a few steps: the claims after
        // them return them first. (Not where the native command and the twin
        // read two clocks, Redis 7.0: there expiry could differ by a ms.)
        let lease = match (tol, rng.chance(1, 3)) {
            (0, true) => rng.range(1, 3),
            (0, false) => rng.range(1, 100_000),
            _ => rng.range(60_000, 100_000),
        };
        let (name, args): (&str, Vec<String>) = if roll < 9 {
            ("wclaim", vec![lease.to_string()])
        } else if roll < 16 {
            ("claim", vec![lease.to_string()])
        } else if roll < 18 {
            let lane = names[rng.below(names.len() as u64) as usize].clone();
            ("weight", vec![lane, rng.range(1, 6).to_string()])
        } else {
            // A producer adds work with core commands and rings the lane if it
            // is absent and now serviceable.
            let lane = names[rng.below(names.len() as u64) as usize].clone();
            // Now and then the producer reuses an id already claimed: the
            // job is then in flight and pending at once (a duplicate).
            let job = match claimed.len() {
                n if n > 0 && rng.chance(1, 3) => claimed[rng.below(n as u64) as usize].clone(),
                _ => format!("{lane}-s{step}"),
            };
            let mint = rng.range(-1, 9).to_string();
            for p in [&n, &l] {
                let _: () = redis::cmd("ZADD")
                    .arg(format!("{p}g:{lane}:pending"))
                    .arg(&mint)
                    .arg(&job)
                    .query(c)
                    .unwrap();
                let pos: Option<i64> = redis::cmd("LPOS")
                    .arg(format!("{p}gring"))
                    .arg(&lane)
                    .query(c)
                    .unwrap();
                if pos.is_none() && serviceable_now(c, p, &lane) {
                    let _: () = redis::cmd("RPUSH")
                        .arg(format!("{p}gring"))
                        .arg(&lane)
                        .query(c)
                        .unwrap();
                }
            }
            continue;
        };
        let at = |p: &str| -> Vec<Vec<u8>> {
            std::iter::once(p.as_bytes().to_vec())
                .chain(args.iter().map(|a| a.as_bytes().to_vec()))
                .collect()
        };
        let (na, la) = (at(&n), at(&l));
        let before = std::env::var("EMQ_SEED").is_ok().then(|| snapshot(c, &n));
        let (rn, rl) = paired(c, twins, name, &refs(&na), &refs(&la));
        let ctx = format!("seed {seed} step {step}: {name} {args:?}");
        assert!(same_reply(&rn, &rl, tol), "{ctx}: {rn:?} vs {rl:?}");
        if name != "weight" {
            claims += 1;
        }
        if let Some((_, _, jobs)) = (name != "weight").then(|| rn.claim()).flatten() {
            claimed.extend(jobs);
        }
        if let Some(d) = diff(&snapshot(c, &n), &snapshot(c, &l), tol as f64) {
            panic!("{ctx}: keyspaces diverge: {d}\nreplies {rn:?} / {rl:?}\nbefore: {before:?}");
        }
    }
    let counted = |c: &mut redis::Connection, f: &str| -> usize {
        info_text(c, "emq", f).and_then(|v| v.parse().ok()).unwrap_or(0)
    };
    let damage = (
        counted(c, "emq_lanes_skipped"),
        counted(c, "emq_duplicates_dropped"),
        // Two clocks (Redis 7.0): no lease expires, none is returned.
        if tol == 0 {
            counted(c, "emq_jobs_reaped_by_claims")
        } else {
            usize::MAX
        },
    );
    DAMAGE.with(|d| d.set(damage));
    claims
}

thread_local! {
    /// What the damaged states and short leases made the native claims do on
    /// this test's server (INFO emq: lanes skipped, duplicates dropped,
    /// expired leases returned first; the last is usize::MAX where no lease
    /// may expire): proof that those paths were compared.
    static DAMAGE: Cell<(usize, usize, usize)> = const { Cell::new((0, 0, 0)) };
}

/// `EMQ_SEED=n` replays one seed (printing each step's keyspace).
fn run_seeds(seeds: std::ops::Range<u64>) -> usize {
    let seeds = match std::env::var("EMQ_SEED").ok().and_then(|s| s.parse().ok()) {
        Some(seed) if seeds.contains(&seed) => seed..seed + 1,
        Some(_) => return 10_000,
        None => seeds,
    };
    over_seeds(seeds, run_seed).into_iter().sum()
}

/// Both halves run in parallel, each on its own server.
fn run_half(seeds: std::ops::Range<u64>) {
    let turns = run_seeds(seeds);
    assert!(turns >= 5_000, "{turns} turns");
    let (skipped, duplicates, reaped) = DAMAGE.with(Cell::get);
    assert!(
        skipped >= 100 && duplicates >= 30 && reaped >= 50,
        "exercised: {skipped} skips, {duplicates} duplicates, {reaped} returned by claims"
    );
}

#[test]
fn native_and_lua_agree_on_random_states_first_half() {
    run_half(0..SEEDS_PER_TEST);
}

#[test]
fn native_and_lua_agree_on_random_states_second_half() {
    run_half(SEEDS_PER_TEST..2 * SEEDS_PER_TEST);
}
