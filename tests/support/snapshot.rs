//! Keyspace snapshots: every key under a prefix, by suffix, comparable
//! across prefixes (native on one, the twins on another).

use std::collections::BTreeMap;

use super::resp::{Conn, Value};

/// One key's content.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    List(Vec<Vec<u8>>),
    Zset(Vec<(Vec<u8>, f64)>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    Set(Vec<Vec<u8>>),
    Str(Vec<u8>),
}

pub type Snapshot = BTreeMap<Vec<u8>, Content>;

pub fn glob_escape(s: &str) -> String {
    let mut out = String::new();
    for ch in s.chars() {
        if matches!(ch, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

fn bytes(v: &Value) -> Vec<u8> {
    match v {
        Value::Bulk(b) => b.clone(),
        other => other.text().into_bytes(),
    }
}

/// Every key under `prefix`, by suffix (three round trips, pipelined).
pub fn snapshot(c: &mut Conn, prefix: &str) -> Snapshot {
    let pattern = format!("{}*", glob_escape(prefix));
    let keys: Vec<Vec<u8>> = c.ok(&["KEYS", &pattern]).items().iter().map(bytes).collect();
    if keys.is_empty() {
        return BTreeMap::new();
    }
    let types: Vec<Vec<Vec<u8>>> = keys.iter().map(|k| vec![b"TYPE".to_vec(), k.clone()]).collect();
    let kinds: Vec<String> = c
        .pipeline(&types)
        .expect("TYPE")
        .into_iter()
        .map(|r| r.expect("TYPE").text())
        .collect();
    let reads: Vec<Vec<Vec<u8>>> = keys
        .iter()
        .zip(&kinds)
        .map(|(key, kind)| {
            let k = key.clone();
            match kind.as_str() {
                "list" => vec![b"LRANGE".to_vec(), k, b"0".to_vec(), b"-1".to_vec()],
                "zset" => vec![
                    b"ZRANGE".to_vec(),
                    k,
                    b"0".to_vec(),
                    b"-1".to_vec(),
                    b"WITHSCORES".to_vec(),
                ],
                "hash" => vec![b"HGETALL".to_vec(), k],
                "set" => vec![b"SMEMBERS".to_vec(), k],
                "string" => vec![b"GET".to_vec(), k],
                other => panic!("unexpected type {other} at {}", String::from_utf8_lossy(key)),
            }
        })
        .collect();
    let values = c.pipeline(&reads).expect("key contents");
    let mut out = BTreeMap::new();
    for ((key, kind), value) in keys.iter().zip(&kinds).zip(values) {
        let value = value.expect("a read");
        let items: Vec<Vec<u8>> = match &value {
            Value::Map(m) => m.iter().flat_map(|(k, v)| [bytes(k), bytes(v)]).collect(),
            Value::Array(_) | Value::Set(_) => value.items().iter().map(bytes).collect(),
            _ => Vec::new(),
        };
        let content = match kind.as_str() {
            "list" => Content::List(items),
            "zset" => Content::Zset(
                items
                    .chunks(2)
                    .map(|p| {
                        (
                            p[0].clone(),
                            String::from_utf8_lossy(&p[1]).parse().expect("a score"),
                        )
                    })
                    .collect(),
            ),
            "hash" => Content::Hash(items.chunks(2).map(|p| (p[0].clone(), p[1].clone())).collect()),
            "set" => {
                let mut m = items;
                m.sort();
                Content::Set(m)
            }
            _ => Content::Str(bytes(&value)),
        };
        out.insert(key[prefix.len()..].to_vec(), content);
    }
    out
}

/// The zsets whose scores are times (lease deadlines, due times).
fn timed(suffix: &[u8]) -> bool {
    suffix == b"active" || suffix == b"schedule" || suffix == b"gnext"
}

/// Compares two snapshots; the scores of `active`, `schedule` and `gnext`,
/// rows' `claimed`, and (in µs) `gcredit` and `gcost` may differ by
/// `tolerance` (two calls read the clock at two moments). The first
/// difference.
pub fn diff(a: &Snapshot, b: &Snapshot, tolerance: f64) -> Option<String> {
    let keys_a: Vec<_> = a
        .keys()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    let keys_b: Vec<_> = b
        .keys()
        .map(|k| String::from_utf8_lossy(k).into_owned())
        .collect();
    if keys_a != keys_b {
        return Some(format!("key sets differ: {keys_a:?} vs {keys_b:?}"));
    }
    for (k, va) in a {
        let vb = &b[k];
        let same = match (va, vb) {
            (Content::Zset(x), Content::Zset(y)) if timed(k) => {
                // Order may differ when times differ; compare by member.
                let mx: BTreeMap<_, _> = x.iter().cloned().collect();
                let my: BTreeMap<_, _> = y.iter().cloned().collect();
                mx.len() == my.len()
                    && mx
                        .iter()
                        .all(|(m, s)| my.get(m).is_some_and(|t| (s - t).abs() <= tolerance))
            }
            // Credits and costs (µs) follow the time a job used.
            (Content::Hash(x), Content::Hash(y)) if k == b"gcredit" || k == b"gcost" => {
                let n = |v: &[u8]| String::from_utf8_lossy(v).parse::<f64>().unwrap_or(f64::NAN);
                x.len() == y.len()
                    && x.iter().all(|(f, v)| {
                        y.get(f)
                            .is_some_and(|w| (n(v) - n(w)).abs() <= tolerance * 1000.0)
                    })
            }
            // A row's `claimed` (fairness by time) is a time too.
            (Content::Hash(x), Content::Hash(y)) if k.starts_with(b"job:") => {
                x.len() == y.len()
                    && x.iter().all(|(f, v)| match y.get(f) {
                        Some(w) if f.as_slice() == b"claimed" => {
                            let n = |v: &[u8]| String::from_utf8_lossy(v).parse::<f64>().unwrap_or(f64::NAN);
                            (n(v) - n(w)).abs() <= tolerance
                        }
                        Some(w) => v == w,
                        None => false,
                    })
            }
            _ => va == vb,
        };
        if !same {
            return Some(format!("{}: {va:?} vs {vb:?}", String::from_utf8_lossy(k)));
        }
    }
    None
}
