//! Differential test: on random seeded states, every native call and its Lua
//! twin give the same reply and leave the same keyspace, every key compared
//! exactly. The two calls run in one MULTI/EXEC, so they read the same
//! server clock and their lease deadlines must be equal. A failure prints the
//! seed and the turn to replay.

mod common;

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
    LaneSpec {
        name,
        jobs,
        weight: (!rng.chance(1, 4)).then(|| rng.range(-1, 6).to_string()),
        limit: limit.map(|l| l.to_string()),
        active: active.map(|a| a.to_string()),
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
    let n = format!("n{seed}{{q}}:");
    let l = format!("l{seed}{{q}}:");
    let names: Vec<String> = (0..rng.range(1, 8) as usize)
        .map(|i| lane_name(&mut rng, i))
        .collect();
    let lanes: Vec<LaneSpec> = names
        .iter()
        .map(|name| random_lane(&mut rng, name.clone()))
        .collect();
    let mut ring: Vec<&str> = names
        .iter()
        .filter(|_| rng.chance(4, 5))
        .map(String::as_str)
        .collect();
    if rng.chance(1, 5) {
        ring.push("never-made");
    }
    rng.shuffle(&mut ring);
    for p in [&n, &l] {
        build(c, p, &lanes, &ring);
    }

    let mut claims = 0;
    let mut step = 0;
    while claims < TURNS_PER_SEED {
        step += 1;
        let roll = rng.below(20);
        let (name, args): (&str, Vec<String>) = if roll < 9 {
            ("wclaim", vec![rng.range(1, 100_000).to_string()])
        } else if roll < 16 {
            ("claim", vec![rng.range(1, 100_000).to_string()])
        } else if roll < 18 {
            let lane = names[rng.below(names.len() as u64) as usize].clone();
            ("weight", vec![lane, rng.range(1, 6).to_string()])
        } else {
            // A producer adds work with core commands and rings the lane if absent.
            let lane = names[rng.below(names.len() as u64) as usize].clone();
            let (mint, job) = (rng.range(0, 9).to_string(), format!("{lane}-s{step}"));
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
                if pos.is_none() {
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
        let (rn, rl) = paired(c, twins, name, &refs(&na), &refs(&la));
        let ctx = format!("seed {seed} step {step}: {name} {args:?}");
        assert!(same_reply(&rn, &rl, tol), "{ctx}: {rn:?} vs {rl:?}");
        if name != "weight" {
            claims += 1;
        }
        if let Some(d) = diff(&snapshot(c, &n), &snapshot(c, &l), tol as f64) {
            panic!("{ctx}: keyspaces diverge: {d}");
        }
    }
    claims
}

fn run_seeds(seeds: std::ops::Range<u64>) -> usize {
    over_seeds(seeds, run_seed)
}

#[test]
fn native_and_lua_agree_on_random_states_first_half() {
    let turns = run_seeds(0..SEEDS_PER_TEST);
    assert!(turns >= 5_000, "{turns} turns");
}

#[test]
fn native_and_lua_agree_on_random_states_second_half() {
    let turns = run_seeds(SEEDS_PER_TEST..2 * SEEDS_PER_TEST);
    assert!(turns >= 5_000, "{turns} turns");
}
