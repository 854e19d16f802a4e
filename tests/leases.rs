//! Leases that look after themselves (SPEC: expired leases first, the expiry
//! timer of waiting clients, returns and dead letters): no reaper process,
//! waiters woken when a crashed worker's leases run out, poison jobs set
//! aside — and all of it reaching replicas and the AOF as the primary made it.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use common::*;

const P: &str = "w{q}:";

fn info_u64(c: &mut redis::Connection, field: &str) -> u64 {
    info_text(c, "emq", field)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// The example worker as a process, its printed lines sent on a channel.
struct Worker {
    child: std::process::Child,
    lines: mpsc::Receiver<String>,
}

impl Worker {
    fn start(server: &Server, lease_ms: u64, work_ms: u64, max_jobs: usize) -> Worker {
        let url = format!("redis://127.0.0.1:{}/", server.port);
        let mut child = Command::new(example_path("worker"))
            .args([url.as_str(), P, &max_jobs.to_string()])
            .env("EMQ_LEASE_MS", lease_ms.to_string())
            .env("EMQ_WORK_MS", work_ms.to_string())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start the example worker");
        let out = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        Worker { child, lines }
    }

    /// The next job the worker took: (job, token).
    fn took(&self) -> (String, i64) {
        loop {
            let line = self.lines.recv_timeout(Duration::from_secs(20)).expect("a job");
            let words: Vec<&str> = line.split(' ').collect();
            if let ["lane", _, "job", job, "token", token] = words[..] {
                return (job.to_string(), token.parse().unwrap());
            }
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The README's worker, killed mid-lease: the job reaches another waiting
/// worker when the lease runs out, with no EMQ.REAP anywhere. Prints the
/// delay between the lease's deadline and the second worker's claim.
#[test]
fn a_killed_workers_job_reaches_a_waiting_worker_without_any_reap() {
    let server = Server::start();
    let mut c = server.conn();
    let lease = 1_500;
    let mut first = Worker::start(&server, lease, 60_000, 1);
    wait_for("the first worker waits", || {
        info_u64(&mut c, "emq_blocked_clients") == 1
    });
    cmd(&mut c, &["EMQ.ENQUEUE", P, "acme", "1", "job-1"]);
    let (job, token) = first.took();
    assert_eq!(job, "job-1");
    let second = Worker::start(&server, 60_000, 0, 1);
    wait_for("the second worker waits", || {
        info_u64(&mut c, "emq_blocked_clients") == 1
    });
    assert_eq!(info_u64(&mut c, "emq_timers"), 1, "a timer for the lease");
    first.child.kill().unwrap(); // SIGKILL: no ACK, no goodbye
    let (job, second_token) = second.took();
    assert_eq!(job, "job-1", "the crashed worker's job");
    let claimed_at = second_token - 60_000;
    let delay = claimed_at - token;
    eprintln!("a crashed worker's job reached the waiting worker {delay} ms after its lease ran out");
    assert!((0..1_000).contains(&delay), "{delay} ms after the deadline");
    let stats: String = redis::cmd("INFO").arg("commandstats").query(&mut c).unwrap();
    assert!(!stats.contains("cmdstat_emq.reap"), "no REAP was called");
    assert_eq!(info_u64(&mut c, "emq_jobs_reaped_by_timer"), 1);
    wait_for("the second worker acks", || {
        snapshot(&mut c, P).keys().all(|k| k == b"jreturns")
    });
    assert_eq!(info_u64(&mut c, "emq_timers"), 0, "no waiter, no timer");
}

/// With max-deliveries 3, a job whose worker crashes every time is leased
/// exactly three times and then listed dead; REVIVE serves it again; the
/// other lane is served all along. Native and twin alike (the twin's
/// returns come from the claims' expired-leases-first step).
#[test]
fn a_poison_job_is_leased_max_deliveries_times_then_dies() {
    both(|c, emq, p| {
        emq.run(c, "policy", &[p, "max-deliveries", "3"]);
        emq.run(c, "enqueue", &[p, "poison", "1", "bad"]);
        for i in 0..40 {
            emq.run(c, "enqueue", &[p, "fine", &i.to_string(), &format!("ok{i}")]);
        }
        let (mut poisoned, mut fine) = (0, 0);
        let deadline = Instant::now() + Duration::from_secs(20);
        while dead_jobs(c, emq, p).is_empty() {
            assert!(Instant::now() < deadline, "the poison job never died");
            match emq.run(c, "claim", &[p, "30"]).claim() {
                Some((lane, _, _)) if lane == "poison" => poisoned += 1, // the worker dies
                Some((_, token, jobs)) => {
                    fine += 1;
                    emq.run(c, "ack", &[p, &token.to_string(), &jobs[0]]);
                }
                None => thread::sleep(Duration::from_millis(10)),
            }
        }
        assert_eq!(
            poisoned, 3,
            "{:?}: leased exactly max-deliveries times",
            emq.flavor
        );
        assert!(fine >= 3, "the other lane was served meanwhile ({fine})");
        let dead = dead_jobs(c, emq, p);
        assert_eq!(dead.len(), 1);
        assert_eq!(
            (dead[0].0.as_str(), dead[0].1.as_deref()),
            ("bad", Some("poison"))
        );
        assert!(
            emq.run(c, "enqueue", &[p, "poison", "1", "bad"]) == Reply::Ok(Value::Int(0)),
            "a dead id is not enqueued again"
        );
        assert_eq!(
            emq.run(c, "revive", &[p, "bad", "nope"]),
            Reply::Ok(Value::Int(1))
        );
        assert!(dead_jobs(c, emq, p).is_empty());
        let returns = hget(c, &format!("{p}jreturns"), "bad");
        assert_eq!(returns, None, "revived with no returns counted");
        let mut lanes = Vec::new();
        for _ in 0..3 {
            if let Some((lane, _, _)) = emq.run(c, "claim", &[p, "60000"]).claim() {
                lanes.push(lane);
            }
        }
        assert!(lanes.contains(&"poison".to_string()), "{lanes:?}: served again");
    });
}

/// `EMQ.DEAD`'s rows: (job, lane, died_at).
fn dead_jobs(c: &mut redis::Connection, emq: &Emq, p: &str) -> Vec<(String, Option<String>, i64)> {
    let reply = emq.run(c, "dead", &[p]);
    let Value::Array(rows) = reply.value() else {
        panic!("{reply:?}")
    };
    rows.iter()
        .map(|row| {
            let Value::Array(f) = row else { panic!("{row:?}") };
            let lane = match &f[1] {
                Value::Nil => None,
                v => Some(text(v)),
            };
            let Value::Int(at) = f[2] else { panic!("{row:?}") };
            (text(&f[0]), lane, at)
        })
        .collect()
}

/// Expired leases returned by claims, by the timer, and deaths reach a
/// replica (without the module under `effects`, with it under `command`) and
/// the AOF exactly as the primary made them.
#[test]
fn returned_and_dead_jobs_reach_replicas_and_the_aof_as_made() {
    for mode in ["effects", "command"] {
        let primary = Server::start_with(&["--appendonly", "yes", "--emq.replicate", mode]);
        let replica = if mode == "command" {
            Server::start_with(&["--emq.replicate", "command"])
        } else {
            Server::start_plain(&[])
        };
        let mut r = replicate_into(&replica, &primary);
        let mut c = primary.conn();
        cmd(&mut c, &["EMQ.POLICY", P, "max-deliveries", "2"]);
        cmd(&mut c, &["EMQ.ENQUEUE", P, "a", "1", "a1", "2", "a2", "3", "a3"]);
        cmd(&mut c, &["EMQ.WEIGHT", P, "a", "3"]);
        cmd(&mut c, &["EMQ.WCLAIM", P, "20"]);
        thread::sleep(Duration::from_millis(40));
        // A claim returns them first (one return each: none dies yet) and
        // leases them again …
        let again = cmd(&mut c, &["EMQ.WCLAIM", P, "300"])
            .claim()
            .expect("served again");
        assert_eq!(again.2.len(), 3);
        assert_eq!(info_u64(&mut c, "emq_jobs_reaped_by_claims"), 3, "{mode}");
        // … and a waiting client's timer returns them the second time: dead.
        let waiter = primary.call_in_thread(&["EMQ.CLAIM", P, "1000", "BLOCK", "1000"]);
        assert_eq!(
            waiter.join().unwrap(),
            Reply::Ok(Value::Nil),
            "{mode}: all died, none to serve"
        );
        assert_eq!(info_u64(&mut c, "emq_jobs_reaped_by_timer"), 3, "{mode}");
        assert_eq!(info_u64(&mut c, "emq_jobs_died"), 3, "{mode}");
        let dead: i64 = redis::cmd("ZCARD").arg(format!("{P}dead")).query(&mut c).unwrap();
        assert_eq!(dead, 3, "{mode}: the second return killed all three");
        assert!(info_u64(&mut c, "emq_jobs_reaped_by_claims") >= 3, "{mode}");
        in_sync(&mut c, &mut r);
        let want = digest(&mut c);
        assert_eq!(
            digest(&mut r),
            want,
            "{mode}: the replica holds what the primary holds"
        );
        drop(r);
        drop(replica);
        let args = ["--appendonly", "yes", "--emq.replicate", mode];
        let primary = primary.restart(&args);
        assert_eq!(digest(&mut primary.conn()), want, "{mode}: the AOF reloads it");
    }
}

/// A replica that accepts writes may hold a waiting client; its timer must
/// still not return its primary's leases (the primary does, and they reach
/// the replica as the primary made them).
#[test]
fn a_replica_never_runs_the_timer() {
    let primary = Server::start();
    let replica = Server::start_with(&["--replica-read-only", "no"]);
    let mut r = replicate_into(&replica, &primary);
    let mut c = primary.conn();
    cmd(&mut c, &["EMQ.ENQUEUE", P, "a", "1", "a1"]);
    let (_, token, _) = cmd(&mut c, &["EMQ.CLAIM", P, "200"]).claim().unwrap();
    in_sync(&mut c, &mut r);
    let waiter = replica.call_in_thread(&["EMQ.CLAIM", P, "1000", "BLOCK", "600"]);
    wait_for("the replica's waiter", || {
        info_u64(&mut r, "emq_blocked_clients") == 1
    });
    assert_eq!(
        info_u64(&mut r, "emq_timers"),
        1,
        "set for the lease, on the replica too"
    );
    assert_eq!(
        waiter.join().unwrap(),
        Reply::Ok(Value::Nil),
        "nothing returned on the replica"
    );
    assert_eq!(info_u64(&mut r, "emq_jobs_reaped_by_timer"), 0);
    let leased: Option<f64> = redis::cmd("ZSCORE")
        .arg(format!("{P}leases"))
        .arg("a1")
        .query(&mut r)
        .unwrap();
    assert_eq!(
        leased,
        Some(token as f64),
        "still leased on the replica: its primary decides"
    );
    assert_eq!(
        cmd(&mut c, &["EMQ.REAP", P]),
        Reply::Ok(Value::Array(vec![Value::BulkString(b"a1".to_vec())]))
    );
    in_sync(&mut c, &mut r);
    assert_eq!(digest(&mut c), digest(&mut r));
}

/// Failover: the replica is promoted; a worker waiting there gets the job of
/// a lease made on the old primary when it runs out.
#[test]
fn a_promoted_replica_returns_leases_for_its_waiters() {
    let primary = Server::start();
    let replica = Server::start();
    let mut r = replicate_into(&replica, &primary);
    let mut c = primary.conn();
    cmd(&mut c, &["EMQ.ENQUEUE", P, "a", "1", "a1"]);
    let (_, token, _) = cmd(&mut c, &["EMQ.CLAIM", P, "800"]).claim().unwrap();
    in_sync(&mut c, &mut r);
    drop(c);
    drop(primary);
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut r)
        .unwrap();
    let (lane, new_token, jobs) = cmd(&mut r, &["EMQ.CLAIM", P, "60000", "BLOCK", "5000"])
        .claim()
        .expect("the new primary returned the lease to its waiter");
    assert_eq!((lane.as_str(), jobs), ("a", vec!["a1".to_string()]));
    let delay = new_token - 60_000 - token;
    assert!((0..1_000).contains(&delay), "{delay} ms after the old deadline");
}

/// No timer runs for a queue nobody waits on: the last waiter to leave (timed
/// out, killed) stops it, and the module then unloads with none behind.
#[test]
fn no_timer_outlives_its_waiters() {
    let server = Server::start_with(&["--enable-module-command", "local"]);
    let mut c = server.conn();
    cmd(&mut c, &["EMQ.ENQUEUE", P, "a", "1", "a1"]);
    cmd(&mut c, &["EMQ.CLAIM", P, "60000"]);
    assert_eq!(info_u64(&mut c, "emq_timers"), 0, "nobody waits");
    let r = cmd(&mut c, &["EMQ.CLAIM", P, "1000", "BLOCK", "100"]);
    assert_eq!(r, Reply::Ok(Value::Nil));
    assert_eq!(
        info_u64(&mut c, "emq_timers"),
        0,
        "the waiter timed out, its timer stopped"
    );
    let port = server.port;
    let killed = thread::spawn(move || {
        let mut w = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
            .unwrap()
            .get_connection()
            .unwrap();
        let _: () = redis::cmd("CLIENT")
            .arg("SETNAME")
            .arg("doomed")
            .query(&mut w)
            .unwrap();
        cmd(&mut w, &["EMQ.CLAIM", P, "1000", "BLOCK", "0"])
    });
    wait_for("the waiter", || info_u64(&mut c, "emq_timers") == 1);
    let _: i64 = redis::cmd("CLIENT")
        .arg("KILL")
        .arg("USER")
        .arg("default")
        .arg("SKIPME")
        .arg("yes")
        .query(&mut c)
        .unwrap();
    let _ = killed.join();
    wait_for("the timer to stop", || info_u64(&mut c, "emq_timers") == 0);
    assert_eq!(info_u64(&mut c, "emq_blocked_clients"), 0);
    assert_eq!(cmd(&mut c, &["MODULE", "UNLOAD", "emq"]), Reply::Ok(Value::Okay));
}

/// `n` jobs of lane `a` leased for 1 ms (expired once the call returns).
fn expired_leases(c: &mut redis::Connection, p: &str, lane: &str, n: usize) {
    let mut args = vec!["EMQ.ENQUEUE".to_string(), p.into(), lane.into()];
    for i in 0..n {
        args.extend([i.to_string(), format!("{lane}{i}")]);
    }
    cmd(c, &args.iter().map(String::as_str).collect::<Vec<_>>());
    cmd(c, &["EMQ.WEIGHT", p, lane, &n.to_string()]);
    let (_, _, jobs) = cmd(c, &["EMQ.WCLAIM", p, "1"]).claim().expect("leased");
    assert_eq!(jobs.len(), n);
    thread::sleep(Duration::from_millis(5));
}

fn leased_count(c: &mut redis::Connection, p: &str) -> i64 {
    redis::cmd("ZCARD").arg(format!("{p}leases")).query(c).unwrap()
}

/// `emq.reap-on-claim` bounds what one claim returns first, 0 turns it off,
/// and it is set as every config of the module is: default, config file,
/// command line, `loadmodule` argument, `CONFIG SET`.
#[test]
fn reap_on_claim_bounds_the_returns_and_is_set_like_every_config() {
    let conf = |c: &mut redis::Connection| -> String {
        let v: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg("emq.reap-on-claim")
            .query(c)
            .unwrap();
        v[1].clone()
    };
    let default = Server::start();
    assert_eq!(conf(&mut default.conn()), "16", "the default");
    let file = Server::start_conf(&format!(
        "loadmodule {}\nemq.reap-on-claim 4\n",
        module_path().display()
    ));
    assert_eq!(conf(&mut file.conn()), "4", "from the config file");
    let arg = Server::start_module_args(&["reap-on-claim", "3"]);
    assert_eq!(conf(&mut arg.conn()), "3", "as a loadmodule argument");

    let server = Server::start_with(&["--emq.reap-on-claim", "2"]);
    let mut c = server.conn();
    assert_eq!(conf(&mut c), "2", "from the command line");
    expired_leases(&mut c, P, "a", 5);
    let (_, token, jobs) = cmd(&mut c, &["EMQ.WCLAIM", P, "60000"]).claim().expect("served");
    assert_eq!(
        info_u64(&mut c, "emq_jobs_reaped_by_claims"),
        2,
        "two returned first"
    );
    assert_eq!(jobs, ["a0", "a1"], "the two returned, leased again");
    let expired: i64 = redis::cmd("ZCOUNT")
        .arg(format!("{P}leases"))
        .arg("-inf")
        .arg(format!("({token}"))
        .query(&mut c)
        .unwrap();
    assert_eq!(expired, 3, "the bound held: three still expired");

    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("emq.reap-on-claim")
        .arg(0)
        .query(&mut c)
        .unwrap();
    let q = "off{q}:";
    expired_leases(&mut c, q, "b", 3);
    assert_eq!(
        cmd(&mut c, &["EMQ.WCLAIM", q, "60000"]),
        Reply::Ok(Value::Array(vec![]))
    );
    assert_eq!(leased_count(&mut c, q), 3, "0: a claim returns none");
    assert_eq!(info_u64(&mut c, "emq_jobs_reaped_by_claims"), 2, "unchanged");
    let refused: redis::RedisResult<()> = redis::cmd("CONFIG")
        .arg("SET")
        .arg("emq.reap-on-claim")
        .arg(-1)
        .query(&mut c);
    assert!(refused.is_err(), "below 0 is refused");
}

/// A lane whose own state is damaged never holds back the returns of the
/// others, however many of its leases expire first: its jobs go back to its
/// pending set too (its damaged numbers and its ring membership are left for
/// REPAIR), by a claim or by the timer — and an expired lease the timer
/// cannot return does not make it fire over and over while a client waits.
#[test]
fn a_damaged_lane_never_holds_back_the_returns_of_the_others() {
    let server = Server::start();
    let mut c = server.conn();
    cmd(&mut c, &["CONFIG", "SET", "emq.reap-on-claim", "0"]);
    // 40 leases of the damaged lane expire before the good lane's one.
    let mut args = vec!["EMQ.ENQUEUE".to_string(), P.into(), "bad".into()];
    for i in 0..40 {
        args.extend([i.to_string(), format!("bad{i}")]);
    }
    cmd(&mut c, &args.iter().map(String::as_str).collect::<Vec<_>>());
    cmd(&mut c, &["EMQ.WEIGHT", P, "bad", "40"]);
    cmd(&mut c, &["EMQ.WCLAIM", P, "1"]).claim().expect("40 leased");
    thread::sleep(Duration::from_millis(3));
    cmd(&mut c, &["EMQ.ENQUEUE", P, "good", "0", "g0"]);
    cmd(&mut c, &["EMQ.WCLAIM", P, "1"]).claim().expect("g0 leased");
    hset(&mut c, &format!("{P}glimit"), "bad", "x");
    thread::sleep(Duration::from_millis(5));
    cmd(&mut c, &["CONFIG", "SET", "emq.reap-on-claim", "16"]);
    let mut served = None;
    for _ in 0..5 {
        if let Some(turn) = cmd(&mut c, &["EMQ.CLAIM", P, "60000"]).claim() {
            served = Some(turn);
            break;
        }
    }
    let (lane, _, jobs) = served.expect("the good lane's job came back and was served");
    assert_eq!((lane.as_str(), jobs), ("good", vec!["g0".to_string()]));
    let bad_pending = int_reply(&mut c, &["ZCARD", &format!("{P}g:bad:pending")]);
    assert!(
        bad_pending >= 16,
        "the damaged lane's jobs went back to it ({bad_pending})"
    );
    assert!(
        !ring(&mut c, P).contains(&"bad".to_string()),
        "its ring membership left as it was"
    );
    assert!(
        server.log().contains("left for EMQ.REPAIR"),
        "and the log says so"
    );

    // Leases of a lane whose pending key holds another type (its jobs
    // cannot go back: they are set aside in P dead), 40 of them ahead of a
    // good lease; then the timer, for a waiter.
    let q = "t{q}:";
    let mut args = vec!["EMQ.ENQUEUE".to_string(), q.into(), "stuck".into()];
    for i in 0..40 {
        args.extend([i.to_string(), format!("s{i}")]);
    }
    cmd(&mut c, &args.iter().map(String::as_str).collect::<Vec<_>>());
    cmd(&mut c, &["EMQ.WEIGHT", q, "stuck", "40"]);
    cmd(&mut c, &["EMQ.CLAIM", q, "1"]).claim().expect("s0 leased");
    cmd(&mut c, &["EMQ.WCLAIM", q, "1"])
        .claim()
        .expect("39 more leased");
    let _: () = redis::cmd("SET")
        .arg(format!("{q}g:stuck:pending"))
        .arg("x")
        .query(&mut c)
        .unwrap();
    cmd(&mut c, &["EMQ.ENQUEUE", q, "good", "5", "g5"]);
    cmd(&mut c, &["EMQ.CLAIM", q, "600"]).claim().expect("g5 leased");
    let firings = info_u64(&mut c, "emq_timer_firings");
    let served = cmd(&mut c, &["EMQ.CLAIM", q, "60000", "BLOCK", "5000"])
        .claim()
        .expect("the timer returned g5 and woke the waiter");
    assert_eq!((served.0.as_str(), served.2), ("good", vec!["g5".to_string()]));
    let fired = info_u64(&mut c, "emq_timer_firings") - firings;
    assert!(
        (1..=3).contains(&fired),
        "the timer fired {fired} times in 600 ms"
    );
    let dead = int_reply(&mut c, &["ZCARD", &format!("{q}dead")]);
    assert_eq!(dead, 40, "the jobs that could not go back are set aside");
    assert_eq!(
        int_reply(&mut c, &["ZCARD", &format!("{q}leases")]),
        1,
        "only g5's new lease"
    );
    // Mended, the lane takes them back.
    let _: () = redis::cmd("DEL")
        .arg(format!("{q}g:stuck:pending"))
        .query(&mut c)
        .unwrap();
    assert_eq!(int_reply(&mut c, &["EMQ.REVIVE", q, "s0", "s1"]), 2);
    let (lane, _, jobs) = cmd(&mut c, &["EMQ.CLAIM", q, "60000"])
        .claim()
        .expect("served again");
    assert_eq!((lane.as_str(), jobs), ("stuck", vec!["s0".to_string()]));
}

/// The timer works in the waiter's database: a lease of db 3 is returned in
/// db 3 to the waiter there, and a queue of the same name in db 0 is left
/// alone.
#[test]
fn the_timer_returns_leases_in_the_waiters_database() {
    let server = Server::start();
    let db = |n: u32| {
        redis::Client::open(format!("redis://127.0.0.1:{}/{n}", server.port))
            .unwrap()
            .get_connection()
            .unwrap()
    };
    let (mut c0, mut c3) = (db(0), db(3));
    for c in [&mut c0, &mut c3] {
        cmd(c, &["EMQ.ENQUEUE", P, "a", "1", "a1"]);
    }
    cmd(&mut c0, &["EMQ.CLAIM", P, "150"]).claim().unwrap();
    let (_, token, _) = cmd(&mut c3, &["EMQ.CLAIM", P, "150"]).claim().unwrap();
    let (lane, second, jobs) = cmd(&mut c3, &["EMQ.CLAIM", P, "60000", "BLOCK", "5000"])
        .claim()
        .expect("db 3's lease returned to db 3's waiter");
    assert_eq!((lane.as_str(), jobs), ("a", vec!["a1".to_string()]));
    assert!(second - 60_000 >= token, "after the lease ran out");
    let in_db0: Option<f64> = redis::cmd("ZSCORE")
        .arg(format!("{P}leases"))
        .arg("a1")
        .query(&mut c0)
        .unwrap();
    assert!(in_db0.is_some(), "db 0's lease is untouched (nobody waits there)");
    assert_eq!(info_u64(&mut c0, "emq_jobs_reaped_by_timer"), 1);
}

/// `EMQ.DEAD P COUNT n`: the oldest n, oldest first; `EMQ.REVIVE` rings the
/// lane as ENQUEUE would, waking a client that waits on the queue.
#[test]
fn dead_lists_the_oldest_first_and_revive_wakes_a_waiter() {
    let server = Server::start();
    let mut c = server.conn();
    cmd(&mut c, &["EMQ.POLICY", P, "max-deliveries", "1"]);
    for (i, job) in ["d0", "d1", "d2"].iter().enumerate() {
        cmd(&mut c, &["EMQ.ENQUEUE", P, "a", &i.to_string(), job]);
        let (_, token, _) = cmd(&mut c, &["EMQ.CLAIM", P, "60000"]).claim().unwrap();
        cmd(&mut c, &["EMQ.NACK", P, &token.to_string(), job]);
        thread::sleep(Duration::from_millis(3)); // distinct death times
    }
    let listed = |c: &mut redis::Connection, args: &[&str]| -> Vec<String> {
        let reply = cmd(c, args);
        let Value::Array(rows) = reply.value() else {
            panic!("{reply:?}")
        };
        rows.iter()
            .map(|r| match r {
                Value::Array(f) => text(&f[0]),
                _ => panic!("{r:?}"),
            })
            .collect()
    };
    assert_eq!(
        listed(&mut c, &["EMQ.DEAD", P]),
        ["d0", "d1", "d2"],
        "oldest first"
    );
    assert_eq!(listed(&mut c, &["EMQ.DEAD", P, "COUNT", "2"]), ["d0", "d1"]);
    assert_eq!(listed(&mut c, &["EMQ.DEAD", P, "count", "1"]), ["d0"]);

    let waiter = server.call_in_thread(&["EMQ.CLAIM", P, "60000", "BLOCK", "5000"]);
    wait_for("the waiter", || info_u64(&mut c, "emq_blocked_clients") == 1);
    assert_eq!(cmd(&mut c, &["EMQ.REVIVE", P, "d1"]), Reply::Ok(Value::Int(1)));
    let (lane, _, jobs) = waiter.join().unwrap().claim().expect("woken by the revival");
    assert_eq!((lane.as_str(), jobs), ("a", vec!["d1".to_string()]));
    assert_eq!(listed(&mut c, &["EMQ.DEAD", P]), ["d0", "d2"]);
}
