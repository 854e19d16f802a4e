//! A worker of a queue in a cluster: as `worker.rs`, through a client that
//! follows the cluster (`MOVED`, `ASK`, `TRYAGAIN`, a node gone). It may be
//! pointed at any node; when its queue's slot moves or its node fails over
//! while it waits in `EMQ.WCLAIM … BLOCK`, the node answers it `MOVED` (or,
//! for a node turned replica, `UNBLOCKED`) and it waits again on the new
//! owner (docs/production.md, "A cluster").
//!
//!     cargo run --release --example cluster_worker -- port[,port…] [emq:{orders}:] [max-jobs]

#[path = "../tests/support/resp.rs"]
mod resp;

#[path = "../tests/support/cluster_client.rs"]
#[allow(dead_code, reason = "the tests use more of it")]
mod cluster_client;

use cluster_client::Client;
use resp::Value;

fn main() {
    let mut args = std::env::args().skip(1);
    let ports: Vec<u16> = args
        .next()
        .unwrap_or_else(|| "6379".into())
        .split(',')
        .filter_map(|p| p.parse().ok())
        .collect();
    let queue = args.next().unwrap_or_else(|| "emq:{orders}:".into());
    let max_jobs: Option<usize> = args.next().and_then(|n| n.parse().ok());
    let mut client = Client::new(ports);
    let mut done = 0;
    while max_jobs.is_none_or(|m| done < m) {
        let jobs = match client.cmd(&["EMQ.WCLAIM", &queue, "30000", "BLOCK", "5000"]) {
            Ok(Value::Array(jobs)) => jobs,
            // Nothing came within 5 s.
            Ok(_) => continue,
            // Its node turned replica (or was reset) while it waited: wait
            // again, where the queue now is.
            Err(e) if e.starts_with("UNBLOCKED") => continue,
            Err(e) => {
                eprintln!("claim failed: {e}");
                std::process::exit(1);
            }
        };
        for job in &jobs {
            let [id, _, attempts, lane] = job.items() else {
                continue;
            };
            let (id, token) = (id.text(), attempts.int().to_string());
            println!("lane {} job {id}", lane.text());
            if let Err(e) = client.cmd(&["EMQ.COMPLETE", &queue, &id, &token]) {
                eprintln!("job {id}: {e}");
            }
            done += 1;
        }
    }
}
