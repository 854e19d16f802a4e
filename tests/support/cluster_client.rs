//! A client that follows a cluster as a common cluster client does:
//! `MOVED` (remembered per queue, by the command's first argument), `ASK`
//! (one command after `ASKING`), `TRYAGAIN` and `CLUSTERDOWN` (tried again
//! shortly), and a node gone (the next one asked where the queue went). The
//! tests' and `examples/cluster_worker.rs`'s.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::resp::{Conn, Reply, Value};

/// What the client met on its way.
#[derive(Debug, Default, Clone, Copy)]
pub struct Met {
    pub moved: u64,
    pub ask: u64,
    pub tryagain: u64,
    pub down: u64,
}

/// A client that follows the cluster (see the file's head).
pub struct Client {
    ports: Vec<u16>,
    conns: HashMap<u16, Conn>,
    /// The node last found serving each queue (by the command's first
    /// argument).
    route: HashMap<String, u16>,
    pub met: Met,
}

impl Client {
    /// A client that knows the nodes at `ports` (any of them will do: the
    /// others are found through MOVED).
    pub fn new(ports: Vec<u16>) -> Client {
        Client {
            ports,
            conns: HashMap::new(),
            route: HashMap::new(),
            met: Met::default(),
        }
    }

    fn send(&mut self, port: u16, asking: bool, args: &[&str]) -> std::io::Result<Reply> {
        let conn = match self.conns.entry(port) {
            std::collections::hash_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::hash_map::Entry::Vacant(e) => {
                let c = Conn::open(port)?;
                c.set_timeout(Some(Duration::from_secs(10)));
                e.insert(c)
            }
        };
        let sent = (|| {
            if asking {
                conn.try_cmd(&["ASKING"])?.map_err(std::io::Error::other)?;
            }
            conn.try_cmd(args)
        })();
        if sent.is_err() {
            self.conns.remove(&port);
        }
        sent
    }

    /// Runs `args` on the node serving its queue, trying for up to 60 s.
    pub fn cmd(&mut self, args: &[&str]) -> Reply {
        let key = args.get(1).copied().unwrap_or_default().to_string();
        let mut at = self.route.get(&key).copied().unwrap_or(self.ports[0]);
        let mut asking = false;
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            assert!(
                Instant::now() < deadline,
                "{args:?}: no node served it within 60 s"
            );
            match self.send(at, std::mem::take(&mut asking), args) {
                Err(_) => {
                    // The node is gone: ask the next one where the queue is.
                    let i = self.ports.iter().position(|p| *p == at).unwrap_or(0);
                    at = self.ports[(i + 1) % self.ports.len()];
                    std::thread::sleep(Duration::from_millis(50));
                }
                Ok(Err(e)) if e.starts_with("MOVED ") || e.starts_with("ASK ") => {
                    let port: u16 = e.rsplit(':').next().unwrap().parse().unwrap();
                    if e.starts_with("ASK ") {
                        self.met.ask += 1;
                        asking = true;
                    } else {
                        self.met.moved += 1;
                        self.route.insert(key.clone(), port);
                    }
                    at = port;
                }
                Ok(Err(e)) if e.starts_with("TRYAGAIN") || e.starts_with("CLUSTERDOWN") => {
                    if e.starts_with("TRYAGAIN") {
                        self.met.tryagain += 1;
                    } else {
                        self.met.down += 1;
                    }
                    at = self.route.get(&key).copied().unwrap_or(at);
                    std::thread::sleep(Duration::from_millis(20));
                }
                Ok(reply) => {
                    self.route.insert(key, at);
                    return reply;
                }
            }
        }
    }

    pub fn ok(&mut self, args: &[&str]) -> Value {
        self.cmd(args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
    }

    /// `args`, then `WAIT 1 500` on the same node: the reply, and whether
    /// a replica acknowledged the write.
    pub fn cmd_acked(&mut self, args: &[&str]) -> (Reply, bool) {
        let reply = self.cmd(args);
        let at = self.route[args[1]];
        let acked = matches!(self.send(at, false, &["WAIT", "1", "500"]), Ok(Ok(Value::Int(n))) if n >= 1);
        (reply, acked)
    }
}
