//! What `emq` reads from the server: the lanes (EMQ.LANES, paged), each
//! lane's row (pipelined core reads, a page at a time), the queue's totals
//! (EMQ.QUEUE), the server's clock and claim counter.

use std::collections::{BTreeSet, HashMap};

use redis::{Connection, RedisResult, Value};

use crate::view::{self, Fig, LaneRow, QueueFig, Totals};

/// Lanes per pipelined page: bounded replies, few round trips.
const PAGE: usize = 1_000;

/// Every lane of the queue (EMQ.LANES from cursor 0 to 0), each once, by
/// name.
pub fn lanes(c: &mut Connection, p: &str) -> RedisResult<Vec<Vec<u8>>> {
    let mut cursor = "0".to_string();
    let mut seen = BTreeSet::new();
    loop {
        let (next, batch): (String, Vec<Vec<u8>>) = redis::cmd("EMQ.LANES")
            .arg(p)
            .arg(&cursor)
            .arg("COUNT")
            .arg(PAGE)
            .query(c)?;
        seen.extend(batch);
        if next == "0" {
            return Ok(seen.into_iter().collect());
        }
        cursor = next;
    }
}

/// How many times the ring holds each lane. One LRANGE: pages could count a
/// lane twice, or miss one, while claims rotate the ring between them.
fn ring_counts(c: &mut Connection, p: &str) -> RedisResult<HashMap<Vec<u8>, usize>> {
    let ring: Value = redis::cmd("LRANGE")
        .arg(format!("{p}ring"))
        .arg(0)
        .arg(-1)
        .query(c)?;
    let mut counts = HashMap::new();
    if let Value::Array(lanes) = ring {
        for lane in lanes {
            if let Value::BulkString(lane) = lane {
                *counts.entry(lane).or_insert(0) += 1;
            }
        }
    }
    // A ring of the wrong type reads as holding nothing; EMQ.QUEUE's totals
    // say WRONGTYPE for it.
    Ok(counts)
}

/// A stored value as the row shows it: its text, or the error the server
/// gave for reading it (`WRONGTYPE` for a key of another type).
fn cell(v: &Value) -> Result<Option<String>, String> {
    match v {
        Value::ServerError(e) => Err(e.code().to_string()),
        Value::Nil => Ok(None),
        Value::BulkString(b) => Ok(Some(view::printable(b))),
        Value::Int(n) => Ok(Some(n.to_string())),
        other => Ok(Some(format!("{other:?}"))),
    }
}

/// Each lane's row: depth, active, limit, weight, paused, rate, its time in
/// `P gnext`, ringed. Plain
/// reads of the keys docs/keyspace.md names, so that the row shows what is
/// stored, damaged values and keys of the wrong type included: one lane's
/// damage never hides the other rows.
pub fn rows(c: &mut Connection, p: &str, lanes: &[Vec<u8>]) -> RedisResult<Vec<LaneRow>> {
    let ring = ring_counts(c, p)?;
    let mut out = Vec::with_capacity(lanes.len());
    for page in lanes.chunks(PAGE) {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for lane in page {
            let mut pending = p.as_bytes().to_vec();
            pending.extend_from_slice(b"g:");
            pending.extend_from_slice(lane);
            pending.extend_from_slice(b":pending");
            pipe.cmd("ZCARD").arg(pending);
            for hash in ["gactive", "glimit", "gweight"] {
                pipe.cmd("HGET").arg(format!("{p}{hash}")).arg(lane);
            }
            pipe.cmd("SISMEMBER").arg(format!("{p}paused")).arg(lane);
            pipe.cmd("HGET").arg(format!("{p}grate")).arg(lane);
            pipe.cmd("ZSCORE").arg(format!("{p}gnext")).arg(lane);
        }
        let replies: Vec<Value> = pipe.query(c)?;
        let text = |v: &Value| cell(v).unwrap_or_else(Some);
        for (lane, r) in page.iter().zip(replies.chunks(7)) {
            out.push(LaneRow {
                lane: view::printable(lane),
                key: lane.clone(),
                depth: match &r[0] {
                    Value::Int(n) => Ok(*n as u64),
                    v => Err(cell(v).err().unwrap_or_else(|| "?".into())),
                },
                active: text(&r[1]),
                limit: text(&r[2]),
                weight: text(&r[3]),
                paused: match &r[4] {
                    Value::Int(n) => Ok(*n == 1),
                    v => Err(cell(v).err().unwrap_or_else(|| "?".into())),
                },
                rate: text(&r[5]),
                back_at: text(&r[6]),
                rate_wait: false,
                ringed: ring.get(lane).copied().unwrap_or(0),
                fig: None,
            });
        }
    }
    mark_rate_waits(c, p, lanes, &mut out)?;
    Ok(out)
}

/// Which lanes' time in `P gnext` is their rate's wait rather than the end
/// of a pause. Unpaused: always. Paused, rated and waiting (few lanes):
/// EMQ.LANE judges by the rate, and says paused until no time when the
/// wait is the rate's; a lane it refuses (damage) keeps the stored time.
fn mark_rate_waits(c: &mut Connection, p: &str, lanes: &[Vec<u8>], rows: &mut [LaneRow]) -> RedisResult<()> {
    let mut asked = Vec::new();
    for (i, r) in rows.iter_mut().enumerate() {
        match r.paused {
            Ok(false) => r.rate_wait = r.back_at.is_some(),
            Ok(true) if r.rate.is_some() && r.back_at.is_some() => asked.push(i),
            _ => {}
        }
    }
    for page in asked.chunks(PAGE) {
        let mut pipe = redis::pipe();
        pipe.ignore_errors();
        for &i in page {
            pipe.cmd("EMQ.LANE").arg(p).arg(&lanes[i]);
        }
        let replies: Vec<Value> = pipe.query(c)?;
        for (&i, reply) in page.iter().zip(&replies) {
            if let Value::Array(flat) = reply {
                rows[i].rate_wait = matches!(field(flat, "paused_until"), Some(Value::Nil));
            }
        }
    }
    Ok(())
}

/// `EMQ.QUEUE`'s figures (a flat field/value array over RESP2).
pub fn totals(c: &mut Connection, p: &str) -> RedisResult<Totals> {
    let flat: Vec<Value> = redis::cmd("EMQ.QUEUE").arg(p).query(c)?;
    let mut t = Totals::default();
    for kv in flat.chunks(2) {
        let [name, value] = kv else { break };
        let name: String = redis::from_redis_value(name.clone())?;
        if name == "max_stalled" {
            t.max_stalled = cell(value).unwrap_or_else(Some);
            continue;
        }
        let value: Option<i64> = redis::from_redis_value(value.clone())?;
        let v = value.unwrap_or(0);
        match name.as_str() {
            "ringed" => t.ringed = v,
            "paused" => t.paused = v,
            "queue_paused" => t.queue_paused = v == 1,
            "pending" => t.flat = v,
            "leased" => t.leased = v,
            "expired" => t.expired = v,
            "next_deadline" => t.next_deadline = value,
            "scheduled" => t.scheduled = v,
            "due" => t.due = v,
            "next_due" => t.next_due = value,
            "throttled" => t.throttled = v,
            "timed_paused" => t.timed_paused = v,
            "next_return" => t.next_return = value,
            "dead" => t.dead = v,
            "completed" => t.completed = v,
            "failed" => t.failed = v,
            _ => {}
        }
    }
    Ok(t)
}

/// An integer field (nil and absent as `None`).
fn int_field(flat: &[Value], name: &str) -> Option<i64> {
    match field(flat, name)? {
        Value::Int(n) => Some(n),
        _ => None,
    }
}

/// A double field (a bulk string over RESP2).
fn float_field(flat: &[Value], name: &str) -> f64 {
    match field(flat, name) {
        Some(Value::BulkString(b)) => String::from_utf8_lossy(&b).parse().unwrap_or(0.0),
        Some(Value::Double(d)) => d,
        _ => 0.0,
    }
}

/// A lane's figures from its EMQ.STATS map (flat over RESP2).
pub fn fig(flat: &[Value]) -> Fig {
    Fig {
        jobs: int_field(flat, "jobs").unwrap_or(0),
        share: float_field(flat, "share"),
        weight_share: float_field(flat, "weight_share"),
        busy_share: float_field(flat, "busy_share"),
        wait_p99: int_field(flat, "wait_p99_ms"),
        oldest: int_field(flat, "oldest_wait_ms"),
    }
}

/// Whether a reply says the server has no EMQ.STATS (an older module).
fn no_stats(e: &redis::RedisError) -> bool {
    e.to_string().to_lowercase().contains("unknown command")
}

/// The figures of `rows`' lanes (EMQ.STATS P LANES …, a page at a time);
/// left as none when the server keeps no figures.
pub fn figures(c: &mut Connection, p: &str, rows: &mut [LaneRow]) -> RedisResult<()> {
    for rows in rows.chunks_mut(PAGE) {
        let page: Vec<&[u8]> = rows.iter().map(|r| r.key.as_slice()).collect();
        let reply: RedisResult<Vec<Vec<Value>>> = redis::cmd("EMQ.STATS")
            .arg(p)
            .arg("LANES")
            .arg(page.len())
            .arg(&page)
            .query(c);
        match reply {
            Ok(maps) => rows.iter_mut().zip(&maps).for_each(|(r, m)| r.fig = Some(fig(m))),
            Err(e) if no_stats(&e) => return Ok(()),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// The queue's figures over the window (EMQ.STATS P); none when the server
/// keeps none.
pub fn queue_figures(c: &mut Connection, p: &str) -> RedisResult<Option<QueueFig>> {
    let reply: RedisResult<Vec<Value>> = redis::cmd("EMQ.STATS")
        .arg(p)
        .arg("COUNT")
        .arg(1)
        .arg("BY")
        .arg("jobs")
        .query(c);
    match reply {
        Ok(flat) => Ok(Some(QueueFig {
            jobs: int_field(&flat, "jobs").unwrap_or(0),
            lanes_served: int_field(&flat, "lanes_served").unwrap_or(0),
            wait_p50: int_field(&flat, "wait_p50_ms"),
            wait_p99: int_field(&flat, "wait_p99_ms"),
        })),
        Err(e) if no_stats(&e) => Ok(None),
        Err(e) => Err(e),
    }
}

/// The server's clock in ms (deadlines are on it, not on this machine's).
pub fn server_ms(c: &mut Connection) -> RedisResult<i64> {
    let (s, us): (i64, i64) = redis::cmd("TIME").query(c)?;
    Ok(s * 1000 + us / 1000)
}

/// `emq_jobs_claimed` from `INFO emq`: every job the server's claims leased.
pub fn jobs_claimed(c: &mut Connection) -> RedisResult<Option<u64>> {
    let info: String = redis::cmd("INFO").arg("emq").query(c)?;
    Ok(info
        .lines()
        .find_map(|l| l.strip_prefix("emq_jobs_claimed:"))
        .and_then(|v| v.trim().parse().ok()))
}

/// A field of a flat field/value reply (RESP2's form of a map).
pub fn field(flat: &[Value], name: &str) -> Option<Value> {
    flat.chunks(2).find_map(|kv| match kv {
        [Value::BulkString(n), v] if n == name.as_bytes() => Some(v.clone()),
        [Value::SimpleString(n), v] if n == name => Some(v.clone()),
        _ => None,
    })
}
