//! A worker: waits for jobs with `EMQ.WCLAIM … BLOCK`, processes them, and
//! ACKs them under the lease token the claim returned. No polling: while
//! there is nothing to do it costs the server nothing.
//!
//!     cargo run --example worker -- [redis://127.0.0.1:6379/] [emq:{orders}:] [max-jobs]
//!
//! `EMQ_LEASE_MS` sets the lease (default 30000), `EMQ_WORK_MS` how long the
//! work of one job takes (default 0). A worker that dies mid-lease needs no
//! one to clean up after it: when its lease runs out the module returns the
//! jobs, and a waiting worker gets them (no EMQ.REAP anywhere).
//!
//! With `make run` in one terminal and this in another, enqueue from a third:
//!
//!     valkey-cli EMQ.ENQUEUE 'emq:{orders}:' acme 1 job-1 2 job-2

use redis::Value;

fn main() -> redis::RedisResult<()> {
    let mut args = std::env::args().skip(1);
    let url = args.next().unwrap_or_else(|| "redis://127.0.0.1:6379/".into());
    let queue = args.next().unwrap_or_else(|| "emq:{orders}:".into());
    let max_jobs: Option<usize> = args.next().and_then(|n| n.parse().ok());
    let mut conn = redis::Client::open(url)?.get_connection()?;
    let env_ms = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let lease_ms = env_ms("EMQ_LEASE_MS", 30_000);
    let work = std::time::Duration::from_millis(env_ms("EMQ_WORK_MS", 0));
    let mut done = 0;
    loop {
        // Wait up to 5 s for a turn; a null reply means nothing came.
        let reply: Value = redis::cmd("EMQ.WCLAIM")
            .arg(&queue)
            .arg(lease_ms)
            .arg("BLOCK")
            .arg(5_000)
            .query(&mut conn)?;
        let Value::Array(turn) = reply else {
            println!("idle");
            continue;
        };
        let (Some(Value::BulkString(lane)), Some(Value::Int(token))) = (turn.first(), turn.get(1)) else {
            continue; // [] : the head lane could not be served; try again
        };
        let jobs: Vec<Vec<u8>> = turn[2..]
            .iter()
            .filter_map(|j| {
                if let Value::BulkString(b) = j {
                    Some(b.clone())
                } else {
                    None
                }
            })
            .collect();
        for job in &jobs {
            // The work itself goes here.
            println!(
                "lane {} job {} token {token}",
                String::from_utf8_lossy(lane),
                String::from_utf8_lossy(job)
            );
            std::thread::sleep(work);
        }
        // ACK under the token: if the lease had expired and been reaped,
        // this counts nothing instead of completing someone else's lease.
        let acked: i64 = redis::cmd("EMQ.ACK")
            .arg(&queue)
            .arg(*token)
            .arg(&jobs)
            .query(&mut conn)?;
        if acked < jobs.len() as i64 {
            eprintln!(
                "{} job(s) were no longer ours (lease expired)",
                jobs.len() as i64 - acked
            );
        }
        done += jobs.len();
        if max_jobs.is_some_and(|m| done >= m) {
            return Ok(());
        }
    }
}
