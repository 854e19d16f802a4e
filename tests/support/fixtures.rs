//! Queues built for a test: jobs enqueued by the module, keys read back.

use super::resp::{Conn, Value};

/// `n` jobs in `lane`, ids `JOB-<lane>-<i>` (i from 1, zero-padded so that
/// id order is enqueue order), payload `p<i>`, by EMQ.ENQUEUE.
pub fn fill(c: &mut Conn, p: &str, lane: &str, n: usize) -> Vec<String> {
    let ids: Vec<String> = (1..=n).map(|i| job_id(lane, i)).collect();
    for chunk in ids.chunks(500) {
        let mut args = vec!["EMQ.ENQUEUE".to_string(), p.to_string(), lane.to_string()];
        for id in chunk {
            let i = id.rsplit('-').next().unwrap().trim_start_matches('0');
            args.push(id.clone());
            args.push(format!("p{i}"));
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(c.int(&refs), chunk.len() as i64, "{lane}: every job enqueued");
    }
    ids
}

pub fn job_id(lane: &str, i: usize) -> String {
    format!("JOB-{lane}-{i:05}")
}

/// `LRANGE P ring 0 -1`.
pub fn ring(c: &mut Conn, p: &str) -> Vec<String> {
    c.ok(&["LRANGE", &format!("{p}ring"), "0", "-1"]).texts()
}

/// `HGET key field`.
pub fn hget(c: &mut Conn, key: &str, field: &str) -> Option<String> {
    c.ok(&["HGET", key, field]).opt_text()
}

/// `HSET key field value`.
pub fn hset(c: &mut Conn, key: &str, field: &str, value: &str) {
    c.ok(&["HSET", key, field, value]);
}

/// A job row's field.
pub fn row(c: &mut Conn, p: &str, job: &str, field: &str) -> Option<String> {
    hget(c, &format!("{p}job:{job}"), field)
}

/// The jobs a claim served: `(id, payload, attempts, lane)` each, from the
/// flat reply of CLAIM or the nested one of WCLAIM / BCLAIM (none for `[]`).
pub fn served(v: &Value) -> Vec<(String, Option<String>, i64, String)> {
    let items = v.items();
    if items.is_empty() {
        return Vec::new();
    }
    let one = |j: &[Value]| {
        assert_eq!(j.len(), 4, "a served job has four fields: {j:?}");
        (j[0].text(), j[1].opt_text(), j[2].int(), j[3].text())
    };
    match &items[0] {
        Value::Array(_) => items.iter().map(|j| one(j.items())).collect(),
        _ => vec![one(items)],
    }
}

/// `ZSCORE key member` as an integer.
pub fn zscore(c: &mut Conn, key: &str, member: &str) -> Option<i64> {
    c.ok(&["ZSCORE", key, member])
        .opt_text()
        .map(|s| s.parse::<f64>().unwrap() as i64)
}

/// The server's clock in ms.
pub fn now_ms(c: &mut Conn) -> i64 {
    let t = c.ok(&["TIME"]).texts();
    t[0].parse::<i64>().unwrap() * 1000 + t[1].parse::<i64>().unwrap() / 1000
}
