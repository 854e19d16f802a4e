//! `emq`: look at and look after an emq queue from a terminal. Talks to the
//! server only through the module's commands and plain reads, like any
//! client; connection options as `valkey-cli` has them.

mod exporter;
mod read;
mod screen;
mod top;
mod view;

use std::process::ExitCode;
use std::time::Duration;

use clap::{Args, Parser, Subcommand};
use redis::{Connection, ConnectionAddr, IntoConnectionInfo, RedisResult, Value};

#[derive(Parser)]
#[command(
    name = "emq",
    version,
    about = "Look at and look after emq queues (the emq-lanes Valkey module)",
    disable_help_flag = true
)]
struct Cli {
    #[command(flatten)]
    conn: Conn,
    #[command(subcommand)]
    command: Command,
    /// Print help.
    #[arg(long, action = clap::ArgAction::Help, global = true)]
    help: Option<bool>,
}

/// Where the server is (`-h` is the host, as in valkey-cli; help is `--help`).
#[derive(Args)]
struct Conn {
    /// Server hostname.
    #[arg(short = 'h', long = "host", default_value = "127.0.0.1", global = true)]
    host: String,
    /// Server port.
    #[arg(short = 'p', long = "port", default_value_t = 6379, global = true)]
    port: u16,
    /// Password (with --user, that user's).
    #[arg(short = 'a', long = "pass", global = true)]
    password: Option<String>,
    /// ACL user name.
    #[arg(long = "user", global = true)]
    user: Option<String>,
    /// Database number.
    #[arg(short = 'n', long = "db", global = true)]
    db: Option<i64>,
    /// Server URI, redis://[user[:password]@]host[:port][/db] (instead of
    /// -h and -p; -a, --user and -n override its parts).
    #[arg(short = 'u', long = "uri", global = true)]
    uri: Option<String>,
}

#[derive(Subcommand)]
enum Command {
    /// A live table of the queue's lanes, deepest first — each lane's share
    /// of jobs beside its share of weight, wait p99 and oldest wait — with
    /// its totals and the jobs claimed per second; until q or Ctrl-C.
    Top {
        /// The queue's prefix (e.g. emq:{orders}:).
        prefix: String,
        /// Seconds between refreshes (at least 0.1).
        #[arg(short = 'i', long, default_value_t = 1.0, value_parser = interval)]
        interval: f64,
        /// Print one frame and exit.
        #[arg(long)]
        once: bool,
    },
    /// Every lane of the queue, deepest first, with its share of jobs beside
    /// its share of weight.
    Lanes { prefix: String },
    /// Serves the queues' figures (EMQ.STATS) to Prometheus at /metrics.
    Exporter {
        /// Where to listen (address:port).
        #[arg(long, default_value = "127.0.0.1:9477")]
        listen: String,
        /// The most lanes of each queue with series of their own (the
        /// busiest in the window); the queue's series are always there.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
        lanes: u64,
        /// The queues' prefixes (e.g. emq:{orders}:).
        #[arg(required = true)]
        prefixes: Vec<String>,
    },
    /// The dead jobs: job, lane, last error.
    Dead {
        prefix: String,
        /// How many.
        #[arg(short = 'c', long, default_value_t = 100)]
        count: u64,
    },
    /// Repairs every lane of the queue (EMQ.LANES, then EMQ.REPAIR each):
    /// ring membership and active counts.
    Repair {
        prefix: String,
        /// Report what would change; change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Puts dead jobs back in their lanes.
    Revive {
        prefix: String,
        #[arg(required = true)]
        jobs: Vec<String>,
    },
}

/// Connects; the error names where it tried.
fn connect(o: &Conn) -> Result<(Connection, String), String> {
    let (info, target) = connection_info(o).map_err(|e| e.to_string())?;
    let client = redis::Client::open(info).map_err(|e| e.to_string())?;
    let c = client
        .get_connection_with_timeout(Duration::from_secs(5))
        .map_err(|e| format!("cannot connect to {target}: {e}"))?;
    Ok((c, target))
}

fn connection_info(o: &Conn) -> RedisResult<(redis::ConnectionInfo, String)> {
    let mut info = match &o.uri {
        Some(uri) => uri.as_str().into_connection_info()?,
        None => ConnectionAddr::Tcp(o.host.clone(), o.port).into_connection_info()?,
    };
    let mut settings = info.redis_settings().clone();
    if let Some(user) = &o.user {
        settings = settings.set_username(user);
    }
    if let Some(password) = &o.password {
        settings = settings.set_password(password);
    }
    if let Some(db) = o.db {
        settings = settings.set_db(db);
    }
    info = info.set_redis_settings(settings);
    let target = info.addr().to_string();
    Ok((info, target))
}

fn main() -> ExitCode {
    // `emq lanes q: | head`: end quietly when the reader goes, as cat does.
    // SAFETY: restores the default action of one signal before any thread.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    let result = match cli.command {
        // It outlives a connection: it connects again when one breaks.
        Command::Exporter {
            listen,
            lanes,
            prefixes,
        } => exporter::serve(|| connect(&cli.conn).map(|(c, _)| c), &listen, lanes, &prefixes),
        command => connect(&cli.conn)
            .and_then(|(mut c, target)| run(&mut c, command, target).map_err(|e| server_error(&e))),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("emq: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(c: &mut Connection, command: Command, target: String) -> RedisResult<()> {
    match command {
        Command::Top {
            prefix,
            interval,
            once,
        } => {
            let o = top::Options {
                prefix,
                interval: Duration::from_secs_f64(interval),
                once,
                target,
            };
            top::run(c, &o)
        }
        Command::Lanes { prefix } => {
            let lanes = read::lanes(c, &prefix)?;
            let mut rows = read::rows(c, &prefix, &lanes)?;
            read::figures(c, &prefix, &mut rows)?;
            view::sort_by_depth(&mut rows);
            let now = read::server_ms(c)?;
            let height = (rows.len() + 1).min(u16::MAX as usize) as u16;
            for line in screen::text(200, height, |area, buf| screen::table(area, buf, &rows, now)) {
                println!("{line}");
            }
            Ok(())
        }
        Command::Exporter { .. } => unreachable!("served in main"),
        Command::Dead { prefix, count } => dead(c, &prefix, count),
        Command::Repair { prefix, dry_run } => repair(c, &prefix, dry_run),
        Command::Revive { prefix, jobs } => {
            let n: i64 = redis::cmd("EMQ.REVIVE").arg(&prefix).arg(&jobs).query(c)?;
            println!("revived {n} of {} jobs", jobs.len());
            Ok(())
        }
    }
}

/// A server's error as the server wrote it (`ERR …`, `NOPERM …`).
fn server_error(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(detail)) => format!("{code} {detail}"),
        _ => e.to_string(),
    }
}

fn interval(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.1 => Ok(v),
        _ => Err("seconds, at least 0.1".into()),
    }
}

/// One `EMQ.DEAD` entry: the job, its lane and its last error (either may be nil).
type DeadEntry = (Vec<u8>, Option<Vec<u8>>, Option<Vec<u8>>);

fn dead(c: &mut Connection, p: &str, count: u64) -> RedisResult<()> {
    let dead: Vec<DeadEntry> = redis::cmd("EMQ.DEAD").arg(p).arg("COUNT").arg(count).query(c)?;
    let text = |v: Option<Vec<u8>>| v.map_or_else(|| "-".to_string(), |b| view::printable(&b));
    let dead: Vec<(String, String, String)> = dead
        .into_iter()
        .map(|(job, lane, error)| (view::printable(&job), text(lane), text(error)))
        .collect();
    let width = dead.iter().map(|d| d.0.chars().count()).max().unwrap_or(0).max(3);
    let lane_width = dead.iter().map(|d| d.1.chars().count()).max().unwrap_or(0).max(4);
    println!("{:<width$}  {:<lane_width$}  LAST ERROR", "JOB", "LANE");
    for (job, lane, error) in &dead {
        println!("{job:<width$}  {lane:<lane_width$}  {error}");
    }
    Ok(())
}

/// Lanes per EMQ.REPAIR call: one pass over the ring and the leases serves
/// them all.
const REPAIR_BATCH: usize = 500;

/// Every lane, repaired (or, dry, checked); one line per lane that changed
/// or that REPAIR found damaged beyond what it re-derives.
fn repair(c: &mut Connection, p: &str, dry: bool) -> RedisResult<()> {
    let lanes = read::lanes(c, p)?;
    let (mut changed, mut damaged) = (0, 0);
    for batch in lanes.chunks(REPAIR_BATCH) {
        let mut cmd = redis::cmd("EMQ.REPAIR");
        cmd.arg(p).arg("LANES").arg(batch.len()).arg(batch);
        if dry {
            cmd.arg("DRYRUN");
        }
        let replies: Vec<Vec<Value>> = cmd.query(c)?;
        for (lane, r) in batch.iter().zip(&replies) {
            let (what, damage) = repair_line(r);
            changed += usize::from(!what.is_empty());
            damaged += usize::from(damage.is_some());
            let mut line = what.join(", ");
            if let Some(d) = damage {
                if !line.is_empty() {
                    line.push_str("; ");
                }
                line.push_str(&format!("damaged, left as it is: {d}"));
            }
            if !line.is_empty() {
                println!("{}: {line}", view::printable(lane));
            }
        }
    }
    let verb = if dry { "would repair" } else { "repaired" };
    let mut summary = format!("{} lanes checked, {verb} {changed}", lanes.len());
    if damaged > 0 {
        summary.push_str(&format!(
            ", {damaged} damaged beyond repair (set their ceiling with EMQ.LIMIT or their rate with EMQ.RATE, or remove the stray key)"
        ));
    }
    println!("{summary}");
    Ok(())
}

/// What one lane's EMQ.REPAIR reply says changed, and the damage it named.
fn repair_line(r: &[Value]) -> (Vec<String>, Option<String>) {
    let int = |name| match read::field(r, name) {
        Some(Value::Int(n)) => n,
        _ => 0,
    };
    let text = |name| match read::field(r, name) {
        // Stored values (a damaged count) and server text, escaped.
        Some(Value::BulkString(b)) => Some(view::printable(&b)),
        _ => None,
    };
    let damage = text("damaged");
    let mut what = Vec::new();
    if int("changed") == 0 {
        return (what, damage);
    }
    if int("ringed_before") != int("ringed_after") {
        what.push(format!(
            "ringed {} -> {}",
            int("ringed_before"),
            int("ringed_after")
        ));
    }
    // A count of 0 is no field: a stored "0" that goes shows as such.
    let before = text("active_before").unwrap_or_else(|| "none".into());
    let after = match int("active_after") {
        0 => "none".to_string(),
        n => n.to_string(),
    };
    if before != after {
        what.push(format!("active {before} -> {after}"));
    }
    // A lane's wait in P gnext for its rate, set or forgotten.
    let time = |name| match read::field(r, name) {
        Some(Value::Int(n)) => n.to_string(),
        _ => "none".into(),
    };
    let (before, after) = (time("next_before"), time("next_after"));
    if before != after {
        what.push(format!("waits {before} -> {after}"));
    }
    (what, damage)
}
