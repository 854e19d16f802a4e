//! The invariants every command keeps (SPEC section 1 and the lifecycle),
//! checked on a snapshot of one queue's keyspace.

use std::collections::{BTreeMap, BTreeSet};

use super::Content;

/// What the keyspace says, in terms the invariants use.
pub struct View {
    pub ring: Vec<String>,
    pub pending: BTreeMap<String, Vec<(String, f64)>>,
    pub leases: BTreeMap<String, f64>,
    pub jlease: BTreeMap<String, String>,
    pub active: BTreeMap<String, String>,
    pub limit: BTreeMap<String, String>,
    pub paused: BTreeSet<String>,
    pub dead: BTreeMap<String, f64>,
    pub jdead: BTreeMap<String, String>,
    pub jreturns: BTreeMap<String, String>,
}

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

impl View {
    pub fn of(snap: &BTreeMap<Vec<u8>, Content>) -> View {
        let hash = |k: &[u8]| match snap.get(k) {
            Some(Content::Hash(h)) => h.iter().map(|(f, v)| (s(f), s(v))).collect(),
            None => BTreeMap::new(),
            other => panic!("{} is {other:?}", s(k)),
        };
        let mut pending = BTreeMap::new();
        for (k, v) in snap {
            let key = s(k);
            if let Some(lane) = key.strip_prefix("g:").and_then(|r| r.strip_suffix(":pending")) {
                let Content::Zset(z) = v else {
                    panic!("{key} is {v:?}")
                };
                pending.insert(lane.to_string(), z.iter().map(|(m, sc)| (s(m), *sc)).collect());
            }
        }
        View {
            ring: match snap.get(&b"gring"[..]) {
                Some(Content::List(l)) => l.iter().map(|x| s(x)).collect(),
                None => Vec::new(),
                other => panic!("gring is {other:?}"),
            },
            pending,
            leases: match snap.get(&b"leases"[..]) {
                Some(Content::Zset(z)) => z.iter().map(|(m, sc)| (s(m), *sc)).collect(),
                None => BTreeMap::new(),
                other => panic!("leases is {other:?}"),
            },
            jlease: hash(b"jlease"),
            active: hash(b"gactive"),
            limit: hash(b"glimit"),
            paused: match snap.get(&b"gpaused"[..]) {
                Some(Content::Set(m)) => m.iter().map(|x| s(x)).collect(),
                None => BTreeSet::new(),
                other => panic!("gpaused is {other:?}"),
            },
            dead: match snap.get(&b"dead"[..]) {
                Some(Content::Zset(z)) => z.iter().map(|(m, sc)| (s(m), *sc)).collect(),
                None => BTreeMap::new(),
                other => panic!("dead is {other:?}"),
            },
            jdead: hash(b"jdead"),
            jreturns: hash(b"jreturns"),
        }
    }

    pub fn serviceable(&self, lane: &str) -> bool {
        let depth = self.pending.get(lane).map_or(0, Vec::len);
        // A count that is no number leaves the lane unserviceable (claims
        // skip it), and fails the count check below.
        let Ok(active) = self.active.get(lane).map_or(Ok(0), |a| a.parse::<i64>()) else {
            return false;
        };
        let limit: Option<i64> = self.limit.get(lane).map(|l| l.parse().unwrap());
        depth > 0 && !self.paused.contains(lane) && limit.is_none_or(|l| active < l)
    }

    pub fn pending_lane_of(&self, job: &str) -> Option<&str> {
        self.pending
            .iter()
            .find(|(_, jobs)| jobs.iter().any(|(j, _)| j == job))
            .map(|(l, _)| l.as_str())
    }
}

/// Checks, on one queue's snapshot: no empty key; the ring holds exactly the
/// serviceable lanes, each once; `leases` and `jlease` hold the same jobs,
/// and `dead` and `jdead`; `gactive` counts each lane's records; every job of
/// `alive` is in exactly one place (a pending zset, the leases, or the dead),
/// each of `maybe` (an operation whose reply was lost) in at most one, and no
/// other job anywhere; `jreturns` counts only jobs pending or leased.
pub fn check_invariants(
    snap: &BTreeMap<Vec<u8>, Content>,
    alive: &BTreeSet<String>,
    maybe: &BTreeSet<String>,
) -> Result<(), String> {
    let v = View::of(snap);
    for (k, content) in snap {
        let empty = match content {
            Content::List(x) | Content::Set(x) => x.is_empty(),
            Content::Zset(x) => x.is_empty(),
            Content::Hash(x) => x.is_empty(),
            Content::Str(_) => return Err(format!("a string key {}", s(k))),
        };
        if empty {
            return Err(format!("empty key {}", s(k)));
        }
    }
    let ringed: BTreeSet<&String> = v.ring.iter().collect();
    if ringed.len() != v.ring.len() {
        return Err(format!("a lane twice in the ring {:?}", v.ring));
    }
    let lanes: BTreeSet<&String> = v
        .pending
        .keys()
        .chain(v.active.keys())
        .chain(v.limit.keys())
        .chain(v.paused.iter())
        .chain(v.ring.iter())
        .collect();
    for lane in lanes {
        if v.serviceable(lane) != ringed.contains(lane) {
            return Err(format!(
                "lane {lane}: serviceable {} but ring {:?}",
                v.serviceable(lane),
                v.ring
            ));
        }
    }
    let leased: BTreeSet<&String> = v.leases.keys().collect();
    let recorded: BTreeSet<&String> = v.jlease.keys().collect();
    if leased != recorded {
        return Err(format!("leases {leased:?} vs jlease {recorded:?}"));
    }
    let mut per_lane = BTreeMap::<String, i64>::new();
    for rec in v.jlease.values() {
        let lane = rec
            .split_once(' ')
            .map(|r| r.1)
            .ok_or_else(|| format!("record {rec:?}"))?;
        *per_lane.entry(lane.to_string()).or_default() += 1;
    }
    let active: BTreeMap<String, i64> = v
        .active
        .iter()
        .map(|(l, a)| (l.clone(), a.parse().unwrap_or(-1)))
        .collect();
    if active != per_lane {
        return Err(format!("gactive {active:?} vs records per lane {per_lane:?}"));
    }
    let mut places = BTreeMap::<&String, usize>::new();
    for jobs in v.pending.values() {
        for (j, _) in jobs {
            *places.entry(j).or_default() += 1;
        }
    }
    for j in v.leases.keys().chain(v.dead.keys()) {
        *places.entry(j).or_default() += 1;
    }
    let buried: BTreeSet<&String> = v.dead.keys().collect();
    let recorded_dead: BTreeSet<&String> = v.jdead.keys().collect();
    if buried != recorded_dead {
        return Err(format!("dead {buried:?} vs jdead {recorded_dead:?}"));
    }
    for (job, n) in &v.jreturns {
        let live = v.leases.contains_key(job) || v.pending_lane_of(job).is_some();
        if !live || n.parse::<i64>().map_or(true, |n| n < 1) {
            return Err(format!(
                "jreturns {job} = {n}, but the job is neither pending nor leased"
            ));
        }
    }
    for job in alive {
        if places.get(job) != Some(&1) {
            return Err(format!("job {job} is in {:?} places", places.get(job)));
        }
    }
    for (job, n) in &places {
        let allowed = alive.contains(*job) || (maybe.contains(*job) && *n == 1);
        if !allowed {
            return Err(format!("job {job} should not exist (in {n} places)"));
        }
    }
    for (job, rec) in &v.jlease {
        if v.pending_lane_of(job).is_some() {
            return Err(format!("{job} is leased and pending ({rec})"));
        }
    }
    Ok(())
}
