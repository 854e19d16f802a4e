//! `emq exporter` scraped by a real Prometheus (Debian's `prometheus`,
//! installed by `make test`) while workers run: the figures Prometheus
//! stores are EMQ.STATS's, read back through its HTTP API; the lanes'
//! series are bounded by `--lanes`.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use emq::model::figures::brand::brand;
use support::fixtures::{now_ms, served};
use support::server::{built, free_port, slow};
use support::{Conn, Server};

const P: &str = "exp{q}:";

/// A child process killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// `GET path` on 127.0.0.1:`port`: the status and the body.
fn get(port: u16, path: &str) -> Option<(u16, String)> {
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let status = text.split_whitespace().nth(1)?.parse().ok()?;
    let body = text.split_once("\r\n\r\n").map(|(_, b)| b.to_string())?;
    Some((status, body))
}

/// A PromQL query's string escaped for a URL.
fn escape(q: &str) -> String {
    q.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Prometheus' instant query: each series' labels and value.
fn query(port: u16, q: &str) -> Vec<(serde_json::Value, f64)> {
    let Some((200, body)) = get(port, &format!("/api/v1/query?query={}", escape(q))) else {
        return Vec::new();
    };
    let v: serde_json::Value = serde_json::from_str(&body).unwrap_or_default();
    v["data"]["result"]
        .as_array()
        .map(|rows| {
            rows.iter()
                .map(|r| {
                    (
                        r["metric"].clone(),
                        r["value"][1]
                            .as_str()
                            .unwrap_or("nan")
                            .parse()
                            .unwrap_or(f64::NAN),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60) * slow();
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(200));
    }
}

fn prometheus(scrape_port: u16) -> (Running, u16, tempdir::Dir) {
    let found = Command::new("prometheus").arg("--version").output();
    assert!(
        found.is_ok_and(|o| o.status.success()),
        "prometheus is missing: `make test` installs it (scripts/deps.sh prometheus)"
    );
    let dir = tempdir::Dir::new("prometheus");
    let config = dir.path.join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: emq\n    static_configs:\n      - targets: ['127.0.0.1:{scrape_port}']\n"
        ),
    )
    .unwrap();
    let port = free_port();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!("--storage.tsdb.path={}", dir.path.join("data").display()))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::from(std::fs::File::create(dir.path.join("log")).unwrap()))
        .spawn()
        .expect("start prometheus");
    (Running(child), port, dir)
}

/// Temporary directories removed on drop.
mod tempdir {
    pub struct Dir {
        pub path: std::path::PathBuf,
    }
    impl Dir {
        pub fn new(name: &str) -> Dir {
            static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
            let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let path = std::env::temp_dir().join(format!("emq-{name}-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&path);
            std::fs::create_dir_all(&path).unwrap();
            Dir { path }
        }
    }
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

fn stat(c: &mut Conn, lane: &str, field: &str) -> i64 {
    c.ok(&["EMQ.STATS", P, "LANE", lane]).field(field).unwrap().int()
}

#[test]
fn prometheus_scrapes_the_figures_emq_stats_gives_while_workers_run() {
    let server = Server::start();
    let mut c = server.conn();
    // Twelve lanes of branded jobs minted a while ago; lane l0 weighs 3.
    let now = now_ms(&mut c);
    for lane in 0..12 {
        let mut args = vec!["EMQ.ENQUEUE".to_string(), P.to_string(), format!("l{lane}")];
        for i in 0..200u64 {
            let minted = now - 5_000 - (i as i64) * 10;
            args.push(String::from_utf8(brand(b"JOB", minted, lane * 1000 + i)).unwrap());
            args.push("p".into());
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        c.ok(&refs);
    }
    c.ok(&["EMQ.WEIGHT", P, "l0", "3"]);

    let exporter_port = free_port();
    let exporter = Running(
        Command::new(built("emq"))
            .args(["-p", &server.port.to_string(), "exporter", "--listen"])
            .arg(format!("127.0.0.1:{exporter_port}"))
            .args(["--lanes", "10", P])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start emq exporter"),
    );
    wait_until("the exporter", || get(exporter_port, "/metrics").is_some());
    let (_prom, prom_port, _dir) = prometheus(exporter_port);
    wait_until("prometheus up", || {
        query(prom_port, "up{job=\"emq\"}")
            .first()
            .is_some_and(|(_, v)| *v == 1.0)
    });

    // Four workers claim and complete while Prometheus scrapes.
    let stop = Arc::new(AtomicBool::new(false));
    let workers: Vec<_> = (0..4)
        .map(|_| {
            let mut w = server.conn();
            let stop = stop.clone();
            thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let jobs = served(&w.ok(&["EMQ.WCLAIM", P, "60000"]));
                    if jobs.is_empty() {
                        break;
                    }
                    thread::sleep(Duration::from_millis(2));
                    for (job, _, token, _) in jobs {
                        w.ok(&["EMQ.COMPLETE", P, &job, &token.to_string()]);
                    }
                }
            })
        })
        .collect();
    wait_until("scrapes while the workers run", || {
        query(prom_port, "emq_lane_jobs_total{lane=\"l0\"}")
            .first()
            .is_some_and(|(_, v)| *v > 0.0)
    });
    thread::sleep(Duration::from_millis(1500));
    stop.store(true, Ordering::Relaxed);
    workers.into_iter().for_each(|w| w.join().unwrap());

    // At rest, Prometheus' figures are EMQ.STATS's.
    let jobs = stat(&mut c, "l0", "total_jobs");
    let busy = stat(&mut c, "l0", "total_busy_ms");
    assert!(jobs > 0);
    wait_until("a scrape after the workers stopped", || {
        query(prom_port, "emq_lane_jobs_total{lane=\"l0\"}")
            .first()
            .is_some_and(|(_, v)| *v == jobs as f64)
    });
    let one = |q: &str| query(prom_port, q).first().map(|(_, v)| *v).unwrap_or(f64::NAN);
    assert_eq!(
        one("emq_lane_turns_total{lane=\"l0\"}"),
        stat(&mut c, "l0", "total_turns") as f64
    );
    assert_eq!(
        one("emq_lane_busy_seconds_total{lane=\"l0\"}"),
        busy as f64 / 1000.0
    );
    let clamps = c
        .ok(&["EMQ.STATS", P, "LANE", "l0"])
        .field("total_clamp")
        .unwrap()
        .clone();
    for clamp in ["weight", "depth"] {
        let q = format!("emq_lane_clamp_turns_total{{lane=\"l0\",clamp=\"{clamp}\"}}");
        assert_eq!(one(&q), clamps.field(clamp).unwrap().int() as f64, "{clamp}");
    }
    assert_eq!(
        one("emq_lane_wait_seconds_count{lane=\"l0\"}"),
        jobs as f64,
        "every job waited once"
    );
    // The waits' median: the jobs were minted 5 s to 7 s before the run.
    let p50 = one("histogram_quantile(0.5, emq_lane_wait_seconds_bucket{lane=\"l0\"})");
    assert!((4.0..=16.0).contains(&p50), "p50 {p50} s");
    assert_eq!(one("emq_queue_lanes_served{queue=\"exp{q}:\"}"), 12.0);
    // Twelve lanes served, ten with series of their own.
    assert_eq!(
        query(prom_port, "emq_lane_jobs_total").len(),
        10,
        "--lanes bounds the lane series"
    );
    // The exporter's own text gives every figure of EMQ.STATS it names.
    let (status, text) = get(exporter_port, "/metrics").unwrap();
    assert_eq!(status, 200);
    let line = format!("emq_lane_jobs_total{{queue=\"{P}\",lane=\"l0\"}} {jobs}");
    assert!(text.contains(&line), "{line} not in:\n{text}");
    let share: f64 = c
        .ok(&["EMQ.STATS", P, "LANE", "l0"])
        .field("weight_share")
        .unwrap()
        .text()
        .parse()
        .unwrap();
    assert!((share - 3.0 / 14.0).abs() < 1e-9, "{share}");
    assert_eq!(get(exporter_port, "/nothing").map(|r| r.0), Some(404));
    drop(exporter);
}
