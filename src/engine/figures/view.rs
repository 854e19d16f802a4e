//! EMQ.STATS (docs/commands.md): a lane's figures over the window and since
//! load, beside what the keyspace says of it now; or a queue's, with its top
//! lanes. Reads only.

use crate::ffi::{Arg, Kind, Reply};
use crate::model::error::Error;
use crate::model::figures::brand::mint_ms;
use crate::model::figures::{Figures, QueueFigures, Tally};
use crate::model::layout::Fixed;
use crate::model::schedule::{effective_weight, Clamp};
use crate::queue::{stored_int, Queue};

use super::{clock, with};

/// The order of EMQ.STATS P's lanes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum By {
    Oldest,
    Wait,
    Jobs,
    Busy,
}

/// A figure's names, over the window and since load.
struct Names {
    turns: &'static str,
    jobs: &'static str,
    clamp: &'static str,
    p50: &'static str,
    p90: &'static str,
    p99: &'static str,
    max: &'static str,
    busy: &'static str,
    ended: &'static str,
    share: &'static str,
    weight_share: &'static str,
    busy_share: &'static str,
}

const WINDOW: Names = Names {
    turns: "turns",
    jobs: "jobs",
    clamp: "clamp",
    p50: "wait_p50_ms",
    p90: "wait_p90_ms",
    p99: "wait_p99_ms",
    max: "wait_max_ms",
    busy: "busy_ms",
    ended: "leases_ended",
    share: "share",
    weight_share: "weight_share",
    busy_share: "busy_share",
};

const TOTAL: Names = Names {
    turns: "total_turns",
    jobs: "total_jobs",
    clamp: "total_clamp",
    p50: "total_wait_p50_ms",
    p90: "total_wait_p90_ms",
    p99: "total_wait_p99_ms",
    max: "total_wait_max_ms",
    busy: "total_busy_ms",
    ended: "total_leases_ended",
    share: "total_share",
    weight_share: "total_weight_share",
    busy_share: "total_busy_share",
};

fn ratio(part: u64, whole: u64) -> Reply {
    Reply::Double(if whole == 0 {
        0.0
    } else {
        part as f64 / whole as f64
    })
}

fn ms(v: Option<u64>) -> Reply {
    v.map_or(Reply::Null, |v| Reply::Int(v as i64))
}

/// A lane's figures (`f`) beside its queue's (`all`): counts, clamps,
/// waits, and its shares of jobs, weight and busy time.
fn figures(out: &mut Vec<(&'static str, Reply)>, n: &Names, f: &Figures, all: &Figures, weights: (i64, i64)) {
    let clamps = Clamp::ALL
        .iter()
        .map(|c| (c.name(), Reply::Int(f.clamp(*c) as i64)))
        .collect();
    out.extend([
        (n.turns, Reply::Int(f.turns as i64)),
        (n.jobs, Reply::Int(f.jobs as i64)),
        (n.clamp, Reply::Map(clamps)),
        (n.p50, ms(f.waits.quantile(0.50))),
        (n.p90, ms(f.waits.quantile(0.90))),
        (n.p99, ms(f.waits.quantile(0.99))),
        (n.max, ms(f.waits.max())),
        (n.busy, Reply::Int(f.busy_ms as i64)),
        (n.ended, Reply::Int(f.leases_ended as i64)),
        (n.share, ratio(f.jobs, all.jobs)),
        (n.weight_share, ratio(weights.0 as u64, weights.1 as u64)),
        (n.busy_share, ratio(f.busy_ms, all.busy_ms)),
    ]);
}

/// A lane's weight as a claim would use it (a damaged one counts as 1 here).
fn weight_of(weights: Option<crate::ffi::Key>, lane: Arg) -> i64 {
    effective_weight(weights.and_then(|h| stored_int(h, lane, "weight of lane").ok().flatten()))
}

/// What a lane's shares are over: the whole queue's figures (the window's,
/// and since load), and the weights of the lanes served in the window and
/// of those served since load. A lane not among them adds its own
/// (`Sums::over`).
struct Sums {
    all: (Figures, Figures),
    window: i64,
    total: i64,
}

impl Sums {
    /// `waits`: the queue's waits summed too (the queue form shows them).
    fn of(q: &Queue, fig: Option<&QueueFigures>, waits: bool) -> Result<Sums, Error> {
        let clock = clock(q);
        let weights = q.optional(Fixed::Weight, Kind::Hash)?;
        let mut sums = Sums {
            all: fig.map(|f| f.sum(clock, waits)).unwrap_or_default(),
            window: 0,
            total: 0,
        };
        for (name, t) in fig.into_iter().flat_map(|f| f.lanes()) {
            let arg = q.ctx.string(name);
            let w = weight_of(weights, arg.as_arg());
            if t.window_jobs(clock) > 0 {
                sums.window = sums.window.saturating_add(w);
            }
            if t.total.jobs > 0 {
                sums.total = sums.total.saturating_add(w);
            }
        }
        Ok(sums)
    }

    /// The sums for a lane of weight `w` with `tally`'s figures: its own
    /// weight added where it was not served.
    fn over(&self, w: i64, window_jobs: u64, total_jobs: u64) -> (i64, i64) {
        let add = |sum: i64, served: bool| if served { sum } else { sum.saturating_add(w) };
        (add(self.window, window_jobs > 0), add(self.total, total_jobs > 0))
    }
}

/// What the keyspace says of the lane now; a damaged value is nil, and
/// `damaged` says why.
fn live(q: &Queue, out: &mut Vec<(&'static str, Reply)>, lane: Arg, now: i64) -> Result<(), Error> {
    // The queue's own keys of another type are the command's error; only
    // the lane's values (and its pending key) are its damage.
    q.active()?;
    q.limits()?;
    let read = q.lane_read(lane);
    let (depth, mut damage) = match read.depth.clone() {
        Ok(d) => (Reply::Int(d as i64), None),
        Err(Error::WrongType) => (Reply::Null, Some(Error::WrongType)),
        Err(e) => return Err(e),
    };
    let mut take = |r: Result<Reply, Error>| -> Result<Reply, Error> {
        match r {
            Ok(v) => Ok(v),
            Err(e @ Error::BadStored { .. }) => {
                damage.get_or_insert(e);
                Ok(Reply::Null)
            }
            Err(e) => Err(e),
        }
    };

    let active = take(read.active.clone().map(Reply::Int))?;
    let limit = take(read.limit.clone().map(|l| l.map_or(Reply::Null, Reply::Int)))?;
    let paused = take(read.paused.clone().map(|p| Reply::Int(i64::from(p))))?;
    let weights = q.optional(Fixed::Weight, Kind::Hash)?;
    let weight = take(match weights {
        None => Ok(Reply::Int(1)),
        Some(h) => stored_int(h, lane, "weight of lane").map(|w| Reply::Int(effective_weight(w))),
    })?;
    let rates = q.optional(Fixed::Rate, Kind::Hash)?;
    let rate = rates
        .and_then(|h| h.hash_get(lane))
        .map_or(Reply::Null, Reply::Owned);
    let until = match rates {
        Some(_) => take(q.throttled_until(lane).map(|t| t.map_or(Reply::Null, Reply::Int)))?,
        None => Reply::Null,
    };
    let oldest = ms(oldest_wait(q, lane.bytes(), now)?);
    let (credit, cost) = crate::engine::views::credit_and_cost(q, lane)?;
    out.extend([
        ("depth", depth),
        ("active", active),
        ("weight", weight),
        ("limit", limit),
        ("rate", rate),
        ("paused", paused),
        ("throttled_until", until),
        ("oldest_wait_ms", oldest),
        ("credit", credit),
        ("cost", cost),
        (
            "damaged",
            damage
                .and_then(|e| e.message())
                .map_or(Reply::Null, |m| Reply::Bytes(m.into_bytes())),
        ),
    ]);
    Ok(())
}

/// The map of one lane: its figures over the window and since load (zeros
/// for a lane never served), then what the keyspace says of it now.
fn lane_map(q: &Queue, fig: Option<&QueueFigures>, lane: &[u8], sums: &Sums) -> Result<Reply, Error> {
    let clock = clock(q);
    let empty = Tally::default();
    let tally = fig.and_then(|f| f.lane(lane)).unwrap_or(&empty);
    let arg = q.ctx.string(lane);
    let weight = weight_of(q.optional(Fixed::Weight, Kind::Hash)?, arg.as_arg());
    let window = tally.window(clock);
    let (in_window, in_total) = sums.over(weight, window.jobs, tally.total.jobs);
    let mut out = Vec::with_capacity(34);
    figures(&mut out, &WINDOW, &window, &sums.all.0, (weight, in_window));
    figures(&mut out, &TOTAL, &tally.total, &sums.all.1, (weight, in_total));
    // For exporters: the waits since load as a histogram (cumulative counts
    // need each bucket's own; a bucket's bound is the largest wait in it).
    let waits = &tally.total.waits;
    let buckets = waits
        .buckets()
        .flat_map(|(upper, n)| [Reply::Int(upper as i64), Reply::Int(n as i64)])
        .collect();
    out.push(("total_wait_sum_ms", Reply::Int(waits.sum() as i64)));
    out.push(("total_wait_histogram", Reply::Array(buckets)));
    live(q, &mut out, arg.as_arg(), clock.now_ms)?;
    Ok(Reply::Map(out))
}

/// EMQ.STATS P lane.
pub fn lane_stats(q: &Queue, lane: &[u8]) -> Result<Reply, Error> {
    with(|store| {
        let fig = store.queue(q.ctx.db(), q.prefix_bytes);
        lane_map(q, fig, lane, &Sums::of(q, fig, false)?)
    })
}

/// EMQ.STATS P LANES n lane …: each lane's map, `lane` first, the shares'
/// sums read once for all.
pub fn lanes_stats(q: &Queue, lanes: &[&[u8]]) -> Result<Reply, Error> {
    with(|store| {
        let fig = store.queue(q.ctx.db(), q.prefix_bytes);
        let sums = Sums::of(q, fig, false)?;
        let rows = lanes
            .iter()
            .map(|lane| named(lane, lane_map(q, fig, lane, &sums)?))
            .collect::<Result<Vec<Reply>, Error>>()?;
        Ok(Reply::Array(rows))
    })
}

/// A lane's map with its name first.
fn named(lane: &[u8], map: Reply) -> Result<Reply, Error> {
    let Reply::Map(mut fields) = map else {
        unreachable!("lane_map answers a map")
    };
    fields.insert(0, ("lane", Reply::Bytes(lane.to_vec())));
    Ok(Reply::Map(fields))
}

/// EMQ.STATS P [COUNT n] [BY …]: the queue's window (jobs, lanes served,
/// waits over all its jobs) and its top `count` lanes in the order asked.
/// `BY oldest` also looks at the ring's lanes never served (a lane that
/// starves is the one to find).
pub fn queue_stats(q: &Queue, count: usize, by: By) -> Result<Reply, Error> {
    with(|store| {
        let clock = clock(q);
        let fig = store.queue(q.ctx.db(), q.prefix_bytes);
        let mut lanes: Vec<(Vec<u8>, Option<&Tally>)> = fig
            .into_iter()
            .flat_map(|f| f.lanes())
            .map(|(n, t)| (n.to_vec(), Some(t)))
            .collect();
        if by == By::Oldest {
            let ring = q.ring()?;
            for i in 0..ring.len() {
                if let Some(name) = ring.list_get(i as i64) {
                    if fig.is_none_or(|f| f.lane(name.bytes()).is_none())
                        && !lanes.iter().any(|l| l.0 == name.bytes())
                    {
                        lanes.push((name.bytes().to_vec(), None));
                    }
                }
            }
        }
        let key = |t: Option<&Tally>, f: fn(&Figures) -> u64| t.map_or(0, |t| f(&t.window(clock)));
        let mut ranked: Vec<(u64, Vec<u8>)> = Vec::with_capacity(lanes.len());
        for (name, t) in lanes {
            let rank = match by {
                By::Oldest => oldest_wait(q, &name, clock.now_ms)?.unwrap_or(0),
                By::Wait => key(t, |f| f.waits.quantile(0.99).unwrap_or(0)),
                By::Jobs => key(t, |f| f.jobs),
                By::Busy => key(t, |f| f.busy_ms),
            };
            ranked.push((rank, name));
        }
        ranked.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
        ranked.truncate(count);
        let sums = Sums::of(q, fig, true)?;
        let window = &sums.all.0;
        let served = fig.map_or(0, |f| f.lanes().filter(|(_, t)| t.window_jobs(clock) > 0).count());
        let mut rows = Vec::with_capacity(ranked.len());
        for (_, name) in &ranked {
            rows.push(named(name, lane_map(q, fig, name, &sums)?)?);
        }
        Ok(Reply::Map(vec![
            ("jobs", Reply::Int(window.jobs as i64)),
            ("lanes_served", Reply::Int(served as i64)),
            ("wait_p50_ms", ms(window.waits.quantile(0.50))),
            ("wait_p99_ms", ms(window.waits.quantile(0.99))),
            (
                "lanes_tracked",
                Reply::Int(fig.map_or(0, |f| f.lanes().count()) as i64),
            ),
            ("lanes", Reply::Array(rows)),
        ]))
    })
}

/// How long the lane's head has waited: `None` when the lane is empty, its
/// key of another type, or its head not a branded id.
fn oldest_wait(q: &Queue, lane: &[u8], now: i64) -> Result<Option<u64>, Error> {
    let Ok(set) = q.pending(lane)?.expect(Kind::Zset) else {
        return Ok(None);
    };
    Ok(set
        .zset_range(f64::INFINITY, 1)
        .first()
        .and_then(|(head, _)| mint_ms(head.bytes()))
        .map(|minted| now.saturating_sub(minted).max(0) as u64))
}
