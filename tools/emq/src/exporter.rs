//! `emq exporter`: the queues' figures (EMQ.STATS, docs/commands.md) at
//! `/metrics` in Prometheus' text format, read from the server at each
//! scrape. The format is the `prometheus-client` crate's; the HTTP server
//! is `tiny_http`'s. Names are `emq_…`, labels `queue` and `lane`: each
//! queue's series always, its lanes' for the `--lanes` busiest in the window.

use std::fmt::Error as FmtError;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;
use prometheus_client::registry::Registry;
use redis::{Connection, RedisResult, Value};

use crate::read;

/// The waits' buckets (ms): powers of two, from 1 ms to about 35 minutes.
/// Each is a bound of the module's own buckets, so the counts are exact for
/// every wait but one of exactly that many ms (counted in the next).
const BUCKETS_MS: [u64; 22] = {
    let mut b = [0u64; 22];
    let mut i = 0;
    while i < 22 {
        b[i] = 1 << i;
        i += 1;
    }
    b
};

const CLAMPS: [&str; 6] = ["weight", "depth", "ceiling", "rate", "max-claim", "one"];

/// One lane's figures as EMQ.STATS gives them (a flat field/value array).
#[derive(Debug)]
struct Lane {
    name: String,
    map: Vec<Value>,
}

/// One queue's figures at a scrape.
#[derive(Debug)]
struct Queue {
    prefix: String,
    map: Vec<Value>,
    lanes: Vec<Lane>,
}

/// Everything one scrape read, encoded on the registry's demand.
#[derive(Debug)]
struct Scrape(Vec<Queue>);

fn int(map: &[Value], name: &str) -> Option<i64> {
    match read::field(map, name)? {
        Value::Int(n) => Some(n),
        _ => None,
    }
}

fn float(map: &[Value], name: &str) -> f64 {
    match read::field(map, name) {
        Some(Value::BulkString(b)) => String::from_utf8_lossy(&b).parse().unwrap_or(0.0),
        Some(Value::Int(n)) => n as f64,
        _ => 0.0,
    }
}

/// The waits since load: per-bucket counts at [`BUCKETS_MS`] (the rest in
/// +Inf), their sum and count, in seconds.
fn histogram(map: &[Value]) -> (f64, u64, Vec<(f64, u64)>) {
    let pairs: Vec<i64> = match read::field(map, "total_wait_histogram") {
        Some(Value::Array(v)) => v
            .iter()
            .map(|x| match x {
                Value::Int(n) => *n,
                _ => 0,
            })
            .collect(),
        _ => Vec::new(),
    };
    let mut counts = vec![0u64; BUCKETS_MS.len()];
    let mut count = 0u64;
    for pair in pairs.chunks(2) {
        let [upper, n] = pair else { continue };
        let n = *n as u64;
        count += n;
        if let Some(i) = BUCKETS_MS.iter().position(|b| *upper as u64 <= *b) {
            counts[i] += n;
        }
    }
    let sum = int(map, "total_wait_sum_ms").unwrap_or(0) as f64 / 1000.0;
    let buckets = BUCKETS_MS
        .iter()
        .zip(counts)
        .map(|(b, n)| (*b as f64 / 1000.0, n))
        .collect();
    (sum, count, buckets)
}

type Labels<'a> = Vec<(&'static str, &'a str)>;

impl Scrape {
    /// A gauge of every queue.
    /// A gauge of every queue (none where the figure is nil).
    fn queue_gauge(
        &self,
        e: &mut DescriptorEncoder,
        name: &str,
        help: &str,
        value: impl Fn(&Queue) -> Option<f64>,
    ) -> Result<(), FmtError> {
        let mut family = e.encode_descriptor(name, help, None, MetricType::Gauge)?;
        for q in &self.0 {
            let Some(v) = value(q) else { continue };
            let labels: Labels = vec![("queue", &q.prefix)];
            family.encode_family(&labels)?.encode_gauge(&v)?;
        }
        Ok(())
    }

    /// A series of every lane shown: a gauge or a counter of `value`.
    fn lane_series(
        &self,
        e: &mut DescriptorEncoder,
        (name, help, kind): (&str, &str, MetricType),
        value: impl Fn(&Lane) -> Option<f64>,
    ) -> Result<(), FmtError> {
        let mut family = e.encode_descriptor(name, help, None, kind)?;
        for q in &self.0 {
            for lane in &q.lanes {
                let Some(v) = value(lane) else { continue };
                let labels: Labels = vec![("queue", &q.prefix), ("lane", &lane.name)];
                let mut m = family.encode_family(&labels)?;
                match kind {
                    MetricType::Counter => m.encode_counter::<NoLabelSet, _, f64>(&v, None)?,
                    _ => m.encode_gauge(&v)?,
                }
            }
        }
        Ok(())
    }
}

impl Collector for Scrape {
    fn encode(&self, mut e: DescriptorEncoder) -> Result<(), FmtError> {
        let e = &mut e;
        let qint = |name: &'static str| move |q: &Queue| int(&q.map, name).map(|v| v as f64);
        let qms = |name: &'static str| move |q: &Queue| int(&q.map, name).map(|v| v as f64 / 1000.0);
        self.queue_gauge(e, "emq_queue_jobs", "Jobs claimed in the window.", qint("jobs"))?;
        self.queue_gauge(
            e,
            "emq_queue_lanes_served",
            "Lanes served in the window.",
            qint("lanes_served"),
        )?;
        self.queue_gauge(
            e,
            "emq_queue_lanes_tracked",
            "Lanes the module keeps figures of.",
            qint("lanes_tracked"),
        )?;
        self.queue_gauge(
            e,
            "emq_queue_wait_p50_seconds",
            "Median wait of the window's jobs.",
            qms("wait_p50_ms"),
        )?;
        self.queue_gauge(
            e,
            "emq_queue_wait_p99_seconds",
            "p99 wait of the window's jobs.",
            qms("wait_p99_ms"),
        )?;

        let total = |name: &'static str| move |l: &Lane| Some(int(&l.map, name).unwrap_or(0) as f64);
        let counter = MetricType::Counter;
        let gauge = MetricType::Gauge;
        self.lane_series(
            e,
            ("emq_lane_turns", "Claim turns since load.", counter),
            total("total_turns"),
        )?;
        self.lane_series(
            e,
            ("emq_lane_jobs", "Jobs claimed since load.", counter),
            total("total_jobs"),
        )?;
        self.lane_series(
            e,
            ("emq_lane_leases_ended", "Leases ended since load.", counter),
            total("total_leases_ended"),
        )?;
        self.lane_series(
            e,
            (
                "emq_lane_busy_seconds",
                "Worker time its jobs used since load.",
                counter,
            ),
            |l| Some(int(&l.map, "total_busy_ms").unwrap_or(0) as f64 / 1000.0),
        )?;
        let share = |name: &'static str| move |l: &Lane| Some(float(&l.map, name));
        self.lane_series(
            e,
            (
                "emq_lane_share",
                "Its share of the queue's jobs in the window.",
                gauge,
            ),
            share("share"),
        )?;
        self.lane_series(
            e,
            (
                "emq_lane_weight_share",
                "Its weight over the weights of the lanes served in the window.",
                gauge,
            ),
            share("weight_share"),
        )?;
        self.lane_series(
            e,
            (
                "emq_lane_busy_share",
                "Its share of the queue's busy time in the window.",
                gauge,
            ),
            share("busy_share"),
        )?;
        let live = |name: &'static str| move |l: &Lane| int(&l.map, name).map(|v| v as f64);
        self.lane_series(
            e,
            ("emq_lane_depth", "Jobs waiting in the lane now.", gauge),
            live("depth"),
        )?;
        self.lane_series(e, ("emq_lane_active", "Jobs leased now.", gauge), live("active"))?;
        self.lane_series(e, ("emq_lane_weight", "Its weight now.", gauge), live("weight"))?;
        self.lane_series(
            e,
            (
                "emq_lane_oldest_wait_seconds",
                "How long its head has waited.",
                gauge,
            ),
            |l| int(&l.map, "oldest_wait_ms").map(|v| v as f64 / 1000.0),
        )?;

        let mut family = e.encode_descriptor(
            "emq_lane_clamp_turns",
            "Turns by the clamp that decided K, since load.",
            None,
            counter,
        )?;
        for q in &self.0 {
            for lane in &q.lanes {
                let clamps = match read::field(&lane.map, "total_clamp") {
                    Some(Value::Array(m)) => m,
                    _ => continue,
                };
                for clamp in CLAMPS {
                    let v = int(&clamps, clamp).unwrap_or(0) as f64;
                    let labels: Labels = vec![("queue", &q.prefix), ("lane", &lane.name), ("clamp", clamp)];
                    family
                        .encode_family(&labels)?
                        .encode_counter::<NoLabelSet, _, f64>(&v, None)?;
                }
            }
        }
        let mut family = e.encode_descriptor(
            "emq_lane_wait_seconds",
            "Waits at first claim, from the job's mint time, since load.",
            None,
            MetricType::Histogram,
        )?;
        for q in &self.0 {
            for lane in &q.lanes {
                let (sum, count, buckets) = histogram(&lane.map);
                let labels: Labels = vec![("queue", &q.prefix), ("lane", &lane.name)];
                family
                    .encode_family(&labels)?
                    .encode_histogram::<NoLabelSet>(sum, count, &buckets, None)?;
            }
        }
        Ok(())
    }
}

/// Reads every queue's figures: EMQ.STATS P COUNT lanes BY jobs each.
fn scrape(c: &mut Connection, lanes: u64, prefixes: &[String]) -> RedisResult<Scrape> {
    let mut queues = Vec::new();
    for p in prefixes {
        let map: Vec<Value> = redis::cmd("EMQ.STATS")
            .arg(p)
            .arg("COUNT")
            .arg(lanes)
            .arg("BY")
            .arg("jobs")
            .query(c)?;
        let lanes = match read::field(&map, "lanes") {
            Some(Value::Array(rows)) => rows
                .into_iter()
                .filter_map(|row| match row {
                    Value::Array(m) => Some(Lane {
                        name: match read::field(&m, "lane") {
                            Some(Value::BulkString(b)) => crate::view::printable(&b),
                            _ => String::new(),
                        },
                        map: m,
                    }),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        queues.push(Queue {
            prefix: p.clone(),
            map,
            lanes,
        });
    }
    Ok(Scrape(queues))
}

/// The text of one scrape.
fn metrics(c: &mut Connection, lanes: u64, prefixes: &[String]) -> Result<String, String> {
    let scrape = scrape(c, lanes, prefixes).map_err(|e| e.to_string())?;
    let mut registry = Registry::default();
    registry.register_collector(Box::new(scrape));
    let mut text = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut text, &registry).map_err(|e| e.to_string())?;
    Ok(text)
}

/// Serves `/metrics` on `listen` until killed; each scrape reads the
/// server anew over one connection, made again when it breaks (a scrape
/// that cannot read answers 503 with why).
pub fn serve(
    connect: impl Fn() -> Result<Connection, String>,
    listen: &str,
    lanes: u64,
    prefixes: &[String],
) -> Result<(), String> {
    let server = tiny_http::Server::http(listen).map_err(|e| format!("cannot listen on {listen}: {e}"))?;
    let mut conn = Some(connect()?);
    eprintln!("emq exporter: http://{listen}/metrics for {}", prefixes.join(" "));
    let content_type = tiny_http::Header::from_bytes(
        &b"Content-Type"[..],
        prometheus_client::encoding::prometheus_text::CONTENT_TYPE.as_bytes(),
    )
    .map_err(|_| "a content type".to_string())?;
    for request in server.incoming_requests() {
        let response = match request.url() {
            "/metrics" => {
                let text = match conn.take().map_or_else(&connect, Ok) {
                    Ok(mut c) => {
                        let text = metrics(&mut c, lanes, prefixes);
                        // A connection that failed is dropped: the next
                        // scrape connects anew.
                        conn = text.is_ok().then_some(c);
                        text
                    }
                    Err(e) => Err(e),
                };
                match text {
                    Ok(text) => tiny_http::Response::from_string(text).with_header(content_type.clone()),
                    Err(e) => {
                        tiny_http::Response::from_string(format!("emq exporter: {e}\n")).with_status_code(503)
                    }
                }
            }
            "/" => tiny_http::Response::from_string("emq exporter: see /metrics\n"),
            _ => tiny_http::Response::from_string("not found\n").with_status_code(404),
        };
        let _ = request.respond(response);
    }
    Ok(())
}
