//! The invariants every command keeps on a sound keyspace
//! (docs/keyspace.md), checked on a snapshot of one queue:
//! - no key is left empty, and `P wake` holds at most 64 entries;
//! - the ring holds exactly the serviceable lanes, each once;
//! - every job is in exactly one of its lane, `P pending`, `P active`,
//!   `P schedule`, `P dead`, and its row's `state` says which; every member
//!   of those sets has such a row;
//! - `gactive` of a lane is the number of its leased jobs.

use std::collections::{BTreeMap, BTreeSet};

use super::snapshot::{Content, Snapshot};

fn s(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What the keyspace says, in terms the invariants use.
pub struct View {
    pub ring: Vec<String>,
    pub lanes: BTreeMap<String, Vec<String>>,
    pub sets: BTreeMap<&'static str, BTreeMap<String, f64>>,
    pub gactive: BTreeMap<String, String>,
    pub glimit: BTreeMap<String, String>,
    pub paused: BTreeSet<String>,
    /// job → its row's fields.
    pub rows: BTreeMap<String, BTreeMap<String, String>>,
    pub wake: usize,
}

const SETS: [&str; 4] = ["pending", "active", "schedule", "dead"];

impl View {
    pub fn of(snap: &Snapshot) -> View {
        let hash = |k: &[u8]| -> BTreeMap<String, String> {
            match snap.get(k) {
                Some(Content::Hash(h)) => h.iter().map(|(f, v)| (s(f), s(v))).collect(),
                None => BTreeMap::new(),
                other => panic!("{} is {other:?}", s(k)),
            }
        };
        let zset = |k: &[u8]| -> BTreeMap<String, f64> {
            match snap.get(k) {
                Some(Content::Zset(z)) => z.iter().map(|(m, sc)| (s(m), *sc)).collect(),
                None => BTreeMap::new(),
                other => panic!("{} is {other:?}", s(k)),
            }
        };
        let mut lanes = BTreeMap::new();
        let mut rows = BTreeMap::new();
        for (k, v) in snap {
            let key = s(k);
            if let Some(lane) = key.strip_prefix("g:").and_then(|r| r.strip_suffix(":pending")) {
                let Content::Zset(z) = v else {
                    panic!("{key} is {v:?}")
                };
                lanes.insert(lane.to_string(), z.iter().map(|(m, _)| s(m)).collect());
            } else if let Some(job) = key.strip_prefix("job:").filter(|j| !j.ends_with(":logs")) {
                rows.insert(job.to_string(), hash(k));
            }
        }
        View {
            ring: match snap.get(&b"ring"[..]) {
                Some(Content::List(l)) => l.iter().map(|x| s(x)).collect(),
                None => Vec::new(),
                other => panic!("ring is {other:?}"),
            },
            lanes,
            sets: SETS.iter().map(|n| (*n, zset(n.as_bytes()))).collect(),
            gactive: hash(b"gactive"),
            glimit: hash(b"glimit"),
            paused: match snap.get(&b"paused"[..]) {
                Some(Content::Set(m)) => m.iter().map(|x| s(x)).collect(),
                None => BTreeSet::new(),
                other => panic!("paused is {other:?}"),
            },
            rows,
            wake: match snap.get(&b"wake"[..]) {
                Some(Content::List(l)) => l.len(),
                _ => 0,
            },
        }
    }

    pub fn serviceable(&self, lane: &str) -> bool {
        let depth = self.lanes.get(lane).map_or(0, Vec::len);
        let Ok(active) = self.gactive.get(lane).map_or(Ok(0), |a| a.parse::<i64>()) else {
            return false;
        };
        let limit: Option<i64> = self.glimit.get(lane).map(|l| l.parse().unwrap());
        depth > 0 && !self.paused.contains(lane) && limit.is_none_or(|l| active < l)
    }

    /// Where the keyspace holds `job`: `g:<lane>` or a set's name.
    pub fn places(&self, job: &str) -> Vec<String> {
        let mut out: Vec<String> = self
            .lanes
            .iter()
            .filter(|(_, jobs)| jobs.iter().any(|j| j == job))
            .map(|(l, _)| format!("g:{l}"))
            .collect();
        out.extend(
            self.sets
                .iter()
                .filter(|(_, m)| m.contains_key(job))
                .map(|(n, _)| n.to_string()),
        );
        out
    }
}

/// Checks the invariants on one queue's snapshot: the first one broken.
pub fn check_invariants(snap: &Snapshot) -> Result<(), String> {
    for (k, content) in snap {
        let empty = match content {
            Content::List(x) | Content::Set(x) => x.is_empty(),
            Content::Zset(x) => x.is_empty(),
            Content::Hash(x) => x.is_empty(),
            // EchoMQ's rate limiter's counter is its one string key.
            Content::Str(_) if k.as_slice() == b"limiter" => false,
            Content::Str(_) => return Err(format!("a string key {}", s(k))),
        };
        if empty {
            return Err(format!("empty key {}", s(k)));
        }
    }
    let v = View::of(snap);
    if v.wake > 64 {
        return Err(format!("P wake holds {}", v.wake));
    }
    let ringed: BTreeSet<&String> = v.ring.iter().collect();
    if ringed.len() != v.ring.len() {
        return Err(format!("a lane twice in the ring {:?}", v.ring));
    }
    let lanes: BTreeSet<&String> = v
        .lanes
        .keys()
        .chain(v.gactive.keys())
        .chain(v.glimit.keys())
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
    let mut leased = BTreeMap::<String, i64>::new();
    for (job, row) in &v.rows {
        let state = row.get("state").map(String::as_str);
        let group = row.get("group");
        let want = match (state, group) {
            (Some("pending"), Some(g)) => format!("g:{g}"),
            (Some("pending"), None) => "pending".into(),
            (Some("active"), _) => "active".into(),
            (Some("scheduled"), _) => "schedule".into(),
            (Some("dead"), _) => "dead".into(),
            other => return Err(format!("job {job}: a row with state {other:?}")),
        };
        let places = v.places(job);
        if places != [want.clone()] {
            return Err(format!(
                "job {job} ({state:?}, lane {group:?}) is in {places:?}, not {want}"
            ));
        }
        if state == Some("active") {
            if let Some(g) = group {
                *leased.entry(g.clone()).or_default() += 1;
            }
        }
    }
    for (lane, jobs) in &v.lanes {
        if let Some(j) = jobs.iter().find(|j| !v.rows.contains_key(*j)) {
            return Err(format!("g:{lane} holds {j}, which has no row"));
        }
    }
    for (name, members) in &v.sets {
        if let Some(j) = members.keys().find(|j| !v.rows.contains_key(*j)) {
            return Err(format!("{name} holds {j}, which has no row"));
        }
    }
    let active: BTreeMap<String, i64> = v
        .gactive
        .iter()
        .map(|(l, a)| (l.clone(), a.parse().unwrap_or(-1)))
        .collect();
    if active != leased {
        return Err(format!("gactive {active:?} vs leased jobs per lane {leased:?}"));
    }
    Ok(())
}
