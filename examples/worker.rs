//! A worker as EchoMQ runs one: it waits for jobs with `EMQ.WCLAIM … BLOCK`
//! (no polling: while there is nothing to do it costs the server nothing),
//! does each job, then `EMQ.COMPLETE` with the job's attempts as the token —
//! or, when the job fails, `EMQ.RETRY` with a delay and a maximum.
//!
//!     cargo run --release --example worker -- [port] [emq:{orders}:] [max-jobs]
//!
//! `EMQ_LEASE_MS` sets the lease (default 30000), `EMQ_WORK_MS` how long one
//! job takes (default 0). A job whose payload is `fail` fails (RETRY in
//! 100 ms, dead after 3 attempts). A worker that dies mid-lease needs no one
//! to clean up after it: when its lease runs out the module returns the jobs
//! (counting a stall), and a waiting worker gets them — no reaper anywhere.
//!
//! With `make run` in one terminal and this in another, enqueue from a third:
//!
//!     valkey-cli EMQ.ENQUEUE 'emq:{orders}:' acme JOB-1 one JOB-2 two

#[path = "../tests/support/resp.rs"]
mod resp;

use resp::{Conn, Value};

fn main() -> std::io::Result<()> {
    let mut args = std::env::args().skip(1);
    let port: u16 = args.next().and_then(|p| p.parse().ok()).unwrap_or(6379);
    let queue = args.next().unwrap_or_else(|| "emq:{orders}:".into());
    let max_jobs: Option<usize> = args.next().and_then(|n| n.parse().ok());
    let env_ms = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let lease = env_ms("EMQ_LEASE_MS", 30_000).to_string();
    let work = std::time::Duration::from_millis(env_ms("EMQ_WORK_MS", 0));
    let mut conn = Conn::open(port)?;
    let mut done = 0;
    loop {
        // Wait up to 5 s for a turn; a null reply means nothing came.
        let reply = conn.cmd(&["EMQ.WCLAIM", &queue, &lease, "BLOCK", "5000"]);
        let jobs = match reply {
            Ok(Value::Array(jobs)) => jobs,
            Ok(_) => {
                println!("idle");
                continue;
            }
            Err(e) => {
                eprintln!("claim failed: {e}");
                std::process::exit(1);
            }
        };
        // [] : the head lane could not be served; claim again.
        for job in &jobs {
            let [id, payload, attempts, lane] = job.items() else {
                continue;
            };
            let (id, token) = (id.text(), attempts.int().to_string());
            println!("lane {} job {id} attempt {token}", lane.text());
            std::thread::sleep(work);
            // Under the token: if the lease had run out and the job gone to
            // another worker, this is refused (EMQSTALE) instead of ending
            // someone else's lease.
            let outcome = if payload.opt_text().as_deref() == Some("fail") {
                conn.cmd(&["EMQ.RETRY", &queue, &id, &token, "100", "3", "it failed"])
            } else {
                conn.cmd(&["EMQ.COMPLETE", &queue, &id, &token])
            };
            if let Err(e) = outcome {
                eprintln!("job {id}: {e}");
            }
            done += 1;
        }
        if max_jobs.is_some_and(|m| done >= m) {
            return Ok(());
        }
    }
}
